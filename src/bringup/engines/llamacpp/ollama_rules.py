"""Ollama rules: the Go server around its llama.cpp runner (llm/server.go, server/sched.go,
server/images.go). llama.cpp's own rules apply to the runner's lines as well.
"""

from __future__ import annotations

from bringup.diagnose.rule import RuleSet, rule
from bringup.verdict import Category as C

RULES = RuleSet(
    engine="ollama",
    rules=(
        rule(
            r"pull model manifest|file does not exist|model ['\"]?[\w:./-]+['\"]? not found|"
            r"manifest unknown|try pulling it first",
            C.MODEL_LOAD_FAILURE,
            5,
            "pull the model first (ollama pull NAME) or check the name/tag",
        ),
        rule(
            r"digest mismatch|file must be downloaded again",
            C.MODEL_LOAD_FAILURE,
            5,
            "the downloaded blob is damaged: remove it and pull the model again",
            name="pull-digest-mismatch",
        ),
        # an EOF while pulling is a cut download (elsewhere it may be any closed stream)
        rule(
            r"\bunexpected EOF\b",
            C.MODEL_LOAD_FAILURE,
            4,
            "the download was cut off: pull again (check the network or proxy)",
            name="pull-cut-off",
            also=r"pulling (?:manifest|[0-9a-f]{6,})",
        ),
        rule(
            r"requires a newer version of Ollama|not supported by your version of Ollama|"
            r"unsupported model (?:format|type)|"
            # the registry's 412 (precondition failed) is its answer to a client too old for
            # the model, whether or not the explanation under it was posted
            r"\bpull model manifest: 412\b",
            C.MODEL_INCOMPATIBLE,
            5.5,
            "upgrade Ollama",
        ),
        # the runner cut a prompt longer than the context it was given (num_ctx): the
        # model answers the prompt's tail only
        rule(
            r"\btruncating input prompt\b[^\n]*\blimit=\d+ prompt=\d+",
            C.INVALID_CONFIG,
            3.5,
            "the prompt is longer than the context the model was loaded with: raise num_ctx "
            "(the request's options or OLLAMA_CONTEXT_LENGTH) or send a shorter prompt",
            name="prompt-truncated-to-context",
        ),
        # the scheduler's own estimate refusing a model the host cannot hold (server/sched.go)
        rule(
            r"model request too large for system",
            C.OOM_HOST,
            5,
            "the model needs more memory than this host has free: a smaller model or "
            "quantization, a smaller num_ctx, or free host memory",
            name="request-too-large-for-system",
        ),
        rule(
            r"llama runner process has terminated: signal: killed",
            C.OOM_HOST,
            5,
            "the runner was killed (usually the kernel OOM killer): a smaller model, a "
            "smaller num_ctx, or fewer OLLAMA_NUM_PARALLEL",
        ),
        # the runner asserting on a ggml op enum means it loaded another build's libggml
        rule(
            r"GGML_ASSERT\(\w+->op == GGML_OP_\w+\) failed",
            C.MISSING_DEPENDENCY,
            3,
            "another llama.cpp/ggml install may shadow Ollama's libraries: check "
            "LD_LIBRARY_PATH/PATH and reinstall Ollama",
        ),
        rule(
            r"unable to load cuda driver library|no compatible GPUs were discovered|"
            r"unable to init GPU|no nvidia devices detected",
            C.MISSING_DEPENDENCY,
            3,
            "install the GPU driver Ollama needs, or run on CPU",
        ),
        rule(
            r"listen tcp .*: bind: address already in use",
            C.PORT_IN_USE,
            6,
            "another server holds the port (often another ollama serve): stop it or set "
            "OLLAMA_HOST to a free port",
        ),
        # the client's request ended by the runner dying under it
        rule(
            r"Error: Post \"?http[^\"\s]*\"?: (?:EOF|read tcp \S+: wsarecv|"
            r".{0,40}connection (?:was forcibly closed|reset by peer))",
            C.RUNTIME_CRASH,
            2.5,
            "the runner died during the request: look at the server log for its last lines "
            "(often a GPU fault or an unsupported model)",
            name="runner-died-mid-request",
        ),
        rule(
            r"llama runner process has terminated: exit status|error loading llama server|"
            r"llama runner process no longer running",
            C.RUNTIME_CRASH,
            1,
        ),
    ),
    remedies={
        C.OOM_GPU: "a smaller num_ctx, fewer GPU layers (num_gpu), OLLAMA_KV_CACHE_TYPE=q8_0 "
        "with flash attention, or a smaller quantization",
        C.INVALID_CONFIG: "unset the OLLAMA_* setting the message names (e.g. "
        "OLLAMA_KV_CACHE_TYPE when flash attention is off)",
    },
)
