"""llama.cpp (llama-server, llama-cli) rules, from common/arg.cpp, src/llama-context.cpp,
src/llama-model-loader.cpp, src/llama-vocab.cpp, tools/server and ggml-cuda.

Ollama embeds llama.cpp, so its rule set includes these.
"""

from __future__ import annotations

from bringup.diagnose.rule import RuleSet, rule
from bringup.verdict import Category as C

_UPDATE = "the model needs a newer llama.cpp build (or a GGUF converted for this build)"
# every spelling llama-server accepts for the flags the rules below implicate
_FA = ("--flash-attn", "-fa")
_CTK = ("--cache-type-k", "-ctk")
_CTV = ("--cache-type-v", "-ctv")

RULES = RuleSet(
    engine="llama.cpp",
    rules=(
        # flag combinations rejected while creating the context
        rule(
            r"quantized V cache (?:requires|was requested, but this requires) flash.?attn|"
            r"V cache quantization requires flash.?attn|"
            r"quantized V cache was requested, but this requires Flash Attention",
            C.INVALID_CONFIG,
            6,
            "quantized V cache needs --flash-attn on (or an f16 V cache)",
            name="quantized-v-cache-needs-flash-attn",
            flags=_FA + _CTV,
        ),
        rule(
            r"SPLIT_MODE_TENSOR requires flash_attn",
            C.INVALID_CONFIG,
            6,
            "-sm tensor needs --flash-attn on",
            name="split-mode-tensor-needs-flash-attn",
            flags=("--split-mode", "-sm", *_FA),
        ),
        rule(
            r"does not support different K \(\w+\) and V \(\w+\) cache types",
            C.INVALID_CONFIG,
            6,
            "use the same -ctk and -ctv type for this model",
            name="different-k-and-v-cache-types",
            flags=_CTK + _CTV,
        ),
        rule(
            r"(?:K|V) cache type \w+ with block size \d+ does not divide n_embd_head",
            C.INVALID_CONFIG,
            6,
            "choose a KV cache type whose block size divides the head size",
        ),
        rule(
            r"n_batch and n_ubatch cannot both be zero",
            C.INVALID_CONFIG,
            6,
            "set -b/-ub to positive values",
        ),
        # argument parsing (common/arg.cpp)
        rule(
            r"error while handling argument|error: invalid argument:|"
            r"error: unknown value for|Unsupported cache type|error: invalid value for|"
            r"error: unknown argument|expected value for argument",
            C.INVALID_CONFIG,
            5.5,
            "the flag or its value is not accepted by this llama.cpp build: check "
            "llama-server --help",
        ),
        # model support
        rule(
            r"unknown model architecture|unknown pre-tokenizer type|"
            r"error loading model (?:vocabulary|architecture|hyperparameters)|"
            r"unknown (?:tokenizer|vocab) type",
            C.MODEL_INCOMPATIBLE,
            5.5,
            _UPDATE,
        ),
        rule(
            r"(?:create_tensor|check_tensor_dims): tensor '[^']+' (?:not found|has wrong shape)|"
            r"wrong number of tensors|tensor '[^']+' has wrong shape|"
            r"key not found in model: |missing tensor '",
            C.MODEL_INCOMPATIBLE,
            5,
            _UPDATE,
        ),
        rule(
            r"invalid magic characters|GGUF file version \d+ is (?:extremely large|not supported)|"
            r"tensor '[^']+' data is not within the file bounds|"
            r"failed to read (?:key-value pairs|tensor info|magic)",
            C.MODEL_LOAD_FAILURE,
            5,
            "the GGUF file is damaged or not a GGUF: download again",
        ),
        # files
        rule(
            r"failed to open GGUF file|gguf_init_from_file: failed to open|"
            r"failed to open .*\.gguf|unable to open (?:the )?model",
            C.MODEL_LOAD_FAILURE,
            4.5,
            "check the -m path exists and is readable",
        ),
        rule(
            r"error loading model|failed to load model|unable to load model|"
            r"exiting due to model loading error|failed to create.?context with model",
            C.MODEL_LOAD_FAILURE,
            2,
            # printed after every cause (a missing file, an unknown architecture, OOM, a
            # refused flag); alone it says only that loading failed
            consequence=True,
        ),
        # The same consequence once the loader has read the file's GGUF header (its
        # key-value pairs are dumped): the file exists and is a GGUF, so a refusal that
        # names no cause is about what the file holds (an architecture, tensor layout or
        # type this build does not know), not about reading it. Outweighs the line above
        # with its repeats; any named cause (a missing file, bounds, OOM) outweighs both.
        rule(
            r"error loading model|failed to load model|unable to load model",
            C.MODEL_INCOMPATIBLE,
            2.6,
            _UPDATE,
            name="refused-after-reading-the-gguf-header",
            also=r"loaded meta data with \d+ key-value pairs|llama_model_loader: - kv +\d+:",
            consequence=True,  # an inference from how far loading got, not a named cause
        ),
        # Ollama's client relaying the runner's refusal ("Error: 500 Internal Server Error:
        # unable to load model"): the file is one Ollama pulled (or imported) itself, so a
        # refusal that names no cause is most often an architecture this Ollama release
        # does not know yet; any named cause (OOM, a missing file) outweighs it
        rule(
            r"\b500 Internal Server Error: unable to load model\b",
            C.MODEL_INCOMPATIBLE,
            2.6,
            "the model needs a newer Ollama release (its runner does not know this model's "
            "architecture): update Ollama, or pull a build of the model for this release",
            name="ollama-server-cannot-load-its-model",
            consequence=True,
        ),
        # Ollama's server relaying that its runner process died: a crash, its cause in the
        # runner's own lines (which outweigh this where the log has them)
        rule(
            r"\bmodel runner has unexpectedly stopped\b",
            C.RUNTIME_CRASH,
            1.8,
            "the model runner process crashed: the server log (OLLAMA_DEBUG=1) names why; "
            "try fewer GPU layers or a smaller context if it is memory",
            name="ollama-runner-stopped",
            consequence=True,
        ),
        # Ollama renders the model's prompt template (Go text/template): a template that
        # reads a field this release does not pass was written for another release
        rule(
            r"\btemplate: [^\n]{0,80}?executing \S* ?at <[^>]+>: can't evaluate field \w+|"
            r"\btemplate: [^\n]{0,80}?function \"\w+\" not defined\b",
            C.MODEL_INCOMPATIBLE,
            3.5,
            "the model's prompt template was written for another Ollama release: pull the "
            "model again (its current template) or update Ollama",
            name="ollama-template-for-another-release",
        ),
        # memory (ggml backends)
        rule(
            r"ggml_backend_\w+_buffer_type_alloc_buffer: allocating [\d.]+ MiB on device "
            r"\d+: \w+ failed: out of memory|"
            r"failed to allocate (?:CUDA|ROCm|Vulkan|SYCL)\d* buffer",
            C.OOM_GPU,
            5.5,
        ),
        rule(
            r"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate|"
            r"failed to allocate CPU buffer|mlock failed|failed to mlock",
            C.OOM_HOST,
            4.5,
            "lower -c / --parallel or use a smaller quantization",
        ),
        # server
        rule(
            r"couldn't bind HTTP server socket|failed to bind|bind\(\) failed",
            C.PORT_IN_USE,
            5.5,
            "another process holds the port: stop it or pick a free port",
        ),
        # asserts and aborts
        rule(r"GGML_ASSERT(?:\(.*\) failed|: )|GGML_ABORT|ggml_abort", C.RUNTIME_CRASH, 2.5),
    ),
    remedies={
        C.OOM_GPU: "offload fewer layers (-ngl), lower the context (-c) or --parallel, "
        "a quantized KV cache (-ctk/-ctv q8_0 with -fa on) or a smaller quantization",
        C.OOM_HOST: "lower -c / --parallel, use mmap (--load-mode mmap) or a smaller quantization",
        C.RUNTIME_CRASH: "try without the last changed flag (e.g. -fa off, -ngl lower, "
        "--split-mode layer) and report with a build number",
        C.UNSUPPORTED_HARDWARE: "use a llama.cpp build compiled for this GPU "
        "(CMAKE_CUDA_ARCHITECTURES) or the CPU backend (-ngl 0)",
    },
)
