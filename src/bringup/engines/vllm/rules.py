"""vLLM rules, from vllm/config (model, cache, parallel), vllm/v1/core/kv_cache_utils.py,
vllm/v1/worker, vllm/model_executor/models/registry.py, vllm/platforms/cuda.py and the
attention backends' validate_configuration (vllm/v1/attention).
"""

from __future__ import annotations

from bringup.diagnose.rule import RuleSet, frame_rule, rule, rx
from bringup.verdict import Category as C

_SELECTED = (
    r"Selected (?:MLA prefill )?backend (?:\w+Enum\.)?(?P<be>\w+) "
    r"is not valid for this configuration"
)

# With the backend left on auto, vLLM lists each backend's reasons ("Reasons: {FLASH_ATTN:
# [block_size not supported], FLASHINFER: [ImportError], ...}"). A setting that every
# backend able to load refuses is what was refused: a flag value (as for a selected backend
# below), not the model.
_FLAG_SETTINGS = ("block_size", "kv_cache_dtype", "dtype")
_NO_BACKEND = r"No valid attention backend found for \w+ with"


def _every_backend_refuses(setting: str) -> str:
    reason = rf"[^\]]*\b{setting} not supported[^\]]*"
    return (
        rf"Reasons: \{{(?=[^}}]*\b{setting} not supported)"
        rf"(?:\s*[\w-]+: \[(?:{reason}|ImportError[^\]]*)\],?)+\s*\}}"
    )


_FLAG_REFUSED_BY_ALL = "(?:" + "|".join(_every_backend_refuses(s) for s in _FLAG_SETTINGS) + ")"

# vLLM's start-up, as vLLM 0.26.0 logged it on an H200 (tests/unit/fixtures/vllm026_*):
# API server args -> engine core config -> distributed init -> weights -> memory profile and
# KV cache -> (torch.compile, CUDA graph capture, unless --enforce-eager) -> "init engine ...
# took" -> API server routes -> "Application startup complete". Checked most advanced first,
# so a line naming several (the engine config names cudagraph settings) reads as its own
# phase; generic words such as "Cudagraph is disabled" are no phase.
PHASES = (
    ("ready (application startup complete)", rx(r"Application startup complete"), ""),
    (
        "starting the API server",
        rx(r"Starting vLLM (?:API )?server on|Supported tasks:|Available routes are", case=True),
        "the engine is built but the HTTP server did not answer: check the port and /health",
    ),
    (
        "engine built (memory profile, KV cache and warm-up done)",
        rx(r"init engine \(profile, create kv cache, warmup model\) took"),
        "the API server stalled after the engine was built: look at the tokenizer and chat "
        "template loading",
    ),
    (
        "starting the engine core",
        rx(
            r"Initializing a V1 LLM engine|EngineCore.*(?:started|waiting for init)|"
            r"Waiting for (?:the )?(?:core )?engine process to start|"
            r"Waiting for \d+ local, \d+ remote core engine proc"
        ),
        "the engine core process did not get further: look at its own lines (EngineCore pid)",
    ),
    (
        "capturing CUDA graphs",
        rx(r"Capturing CUDA graphs|Graph capturing finished|CUDA graph capture"),
        "capture stalled: --enforce-eager, or fewer sizes (--max-cudagraph-capture-size)",
    ),
    (
        "compiling (torch.compile)",
        rx(
            r"torch\.compile takes|Dynamo bytecode transform|Compiling a graph|Compil\w+ .*range|"
            r"Cache the graph|inductor",
            case=True,
        ),
        "first compilation can take minutes: raise the start timeout, keep the compile cache "
        "(~/.cache/vllm), or --enforce-eager",
    ),
    (
        "profiling memory and allocating the KV cache",
        rx(
            r"Available KV cache memory|GPU KV cache size|Maximum concurrency for|"
            r"Memory profiling takes"
        ),
        "raise the start timeout, or lower --gpu-memory-utilization / --max-model-len",
    ),
    (
        "loading weights",
        rx(
            r"Loading model from scratch|Loading weights took|Model loading took|"
            r"checkpoint shards|Starting to load model"
        ),
        "weights load slowly from this storage: raise the start timeout or copy them to local disk",
    ),
    (
        "connecting to peers (distributed init)",
        rx(r"world_size=\d+ rank=\d+|distributed_init_method|NCCL (?:INFO|version)"),
        "ranks are waiting for each other: NCCL_DEBUG=INFO, and check that all ranks started",
    ),
    (
        "resolving the model config",
        rx(r"non-default args:|Resolved architecture|Using max model len"),
        "reading the model config stalled: check the model path and, offline, HF_HUB_OFFLINE=1",
    ),
)

RULES = RuleSet(
    engine="vllm",
    phases=PHASES,
    module_marker="/vllm/",
    rules=(
        rule(
            r"No available memory for the cache blocks|"
            r"Available KV cache memory: -|"
            r"CUDA out of memory occurred when warming up",
            C.OOM_GPU,
            6,
        ),
        rule(
            r"KV cache is needed, which is larger than the available KV cache memory"
            r"(?:.*estimated maximum model length is (?P<est>\d+))?|"
            # the head of the same message, where a terminal or a post wrapped the line
            r"\bTo serve at least one request with the model's max seq len \(\d+\)|"
            r"is larger than the maximum number of tokens that can be stored in KV cache",
            C.OOM_GPU,
            5.5,
            "lower --max-model-len (the log estimates {est}) or raise --gpu-memory-utilization",
        ),
        # v1/worker/gpu_worker.py: free memory grew while this engine profiled its own use,
        # because another process on the device let memory go (a neighbour that stopped or
        # crashed): nothing about this configuration, so it is retried, never pruned on
        rule(
            r"Error in memory profiling\. Initial free memory .* current free memory|"
            r"other processes sharing the same container release GPU memory while vLLM is "
            r"profiling",
            C.RUNTIME_CRASH,
            8,
            "another process on this GPU freed memory while vLLM measured its own: run the "
            "trial again; with trials side by side, keep [resources] shared_device on",
            name="memory-profiling-neighbour",
            transient=True,
        ),
        rule(
            # the head alone where the line is wrapped before "GPU memory utilization"
            r"Free memory on device \(?[\d./ ]+ ?GiB\)? on startup is less than desired|"
            r"Free memory on device .* is less than desired GPU memory utilization",
            C.OOM_GPU,
            5.5,
            "another process holds GPU memory: free it or lower --gpu-memory-utilization",
        ),
        rule(
            r"User-specified max_model_len \(\d+\) is greater than the derived max_model_len|"
            r"max_model_len .* (?:is greater than|exceeds) .*max_position_embeddings",
            C.INVALID_CONFIG,
            6,
            "lower --max-model-len to the model's context length (or set "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 knowingly)",
        ),
        # config/parallel.py: more ranks than this node's visible GPUs (seen on one H200
        # with --tensor-parallel-size 2): a parallel size the engine refuses before any
        # process group exists (the corpus convention: invalid_config)
        rule(
            r"World size \((?P<ws>\d+)\) is larger than the number of available GPUs "
            r"\((?P<gpus>\d+)\)",
            C.INVALID_CONFIG,
            6,
            "the parallelism flags need {ws} GPUs but {gpus} are visible: lower "
            "--tensor-parallel-size / --pipeline-parallel-size, make more GPUs visible "
            "(CUDA_VISIBLE_DEVICES, engine.gpus), or span nodes (--nnodes, Ray)",
        ),
        rule(
            r"Model architectures? \[.*\] (?:are|is) not supported|"
            r"Cannot find model module|"
            r"architectures? .* (?:are|is) not (?:yet )?supported",
            C.MODEL_INCOMPATIBLE,
            6,
            "this vLLM version has no implementation for the architecture: a newer vLLM, "
            "or --trust-remote-code / --model-impl transformers",
        ),
        # An explicitly chosen backend that refuses the configuration prints the reasons of
        # its validate_configuration (v1/attention/backend.py, raised in platforms/cuda.py
        # and the MLA prefill selector); the reasons decide what was refused.
        rule(
            _SELECTED + r".*(?:compute capability|device capability|not supported on)",
            C.UNSUPPORTED_HARDWARE,
            6.5,
            "choose an --attention-backend that supports this GPU (or leave it on auto)",
        ),
        rule(
            _SELECTED + r".*(?:head_size|MLA|sink setting|sparse|non-causal attention|"
            r"partial multimodal token full attention|attention type \S+) not supported",
            C.MODEL_INCOMPATIBLE,
            6.2,
            "the {be} attention backend cannot serve this model's attention (head size, MLA, "
            "sinks or sparsity): choose another --attention-backend, or leave it on auto",
        ),
        rule(
            _SELECTED + r".*\b(?:kv_cache_dtype|block_size|dtype) not supported",
            C.INVALID_CONFIG,
            6,
            "the {be} attention backend cannot take this --kv-cache-dtype / --block-size / "
            "--dtype: choose another --attention-backend (or leave it on auto so vLLM picks "
            "one that takes it), or --kv-cache-dtype auto",
        ),
        rule(
            _SELECTED,
            C.INVALID_CONFIG,
            5,
            "--attention-backend {be} cannot serve this model/flag set: choose another or auto",
        ),
        rule(
            _NO_BACKEND + r".*" + _FLAG_REFUSED_BY_ALL,
            C.INVALID_CONFIG,
            6,
            "no attention backend of this vLLM takes this --block-size / --kv-cache-dtype / "
            "--dtype (the log lists each backend's reasons): use a value the backends take, "
            "or leave it on auto",
            name="no-backend-takes-flag",
        ),
        rule(
            rf"^(?!.*{_FLAG_REFUSED_BY_ALL}).*{_NO_BACKEND}",
            C.MODEL_INCOMPATIBLE,
            4.5,
            "no attention backend of this vLLM takes this model with these settings (the log "
            "lists each backend's reasons): another --kv-cache-dtype or --block-size, or a "
            "newer vLLM",
        ),
        rule(
            r"(?:Bfloat16|bf16) is only supported on GPUs with compute capability",
            C.UNSUPPORTED_HARDWARE,
            6,
            "use --dtype half on this GPU",
        ),
        rule(
            r"quantization method .* is not supported for the current GPU|"
            r"Minimum capability: \d+",
            C.UNSUPPORTED_HARDWARE,
            5.5,
            "this quantization's kernels need a newer GPU: use another quantization or GPU",
        ),
        # --quantization names another method than the checkpoint's own config
        rule(
            r"does not match the quantization method specified in the `?quantization`? argument",
            C.INVALID_CONFIG,
            5.5,
            "drop --quantization (the checkpoint names its own method) or pass the method "
            "its config names",
        ),
        rule(
            r"Quantization method specified in the model config \(\w+\) does not match|"
            r"Unknown quantization method|quantization .* is not supported by|"
            r"Cannot find the config file for \w+",
            C.MODEL_INCOMPATIBLE,
            4.5,
        ),
        rule(
            r"Total number of attention heads \(\d+\) must be divisible by tensor parallel",
            C.INVALID_CONFIG,
            6,
            "choose a --tensor-parallel-size that divides the number of attention heads",
        ),
        rule(
            r"Engine core initialization failed|WorkerProc failed to start|"
            r"EngineCore failed to start|Engine process failed to start|EngineDeadError|"
            r"Worker failed with error|RuntimeError: Engine loop has died",
            C.RUNTIME_CRASH,
            0.9,
        ),
    ),
    frame_rules=(
        frame_rule(
            r"ValueError|AssertionError|TypeError|NotImplementedError",
            r"arg_utils\.py|/vllm/config",
            C.INVALID_CONFIG,
            3,
        ),
        frame_rule(
            r"ValueError|NotImplementedError",
            r"_raise_for_unsupported|"
            r"/model_executor/models/",
            C.MODEL_INCOMPATIBLE,
            3,
        ),
    ),
    remedies={
        C.OOM_GPU: "lower --max-num-seqs, --max-model-len or --max-num-batched-tokens; "
        "--enforce-eager saves the CUDA graph memory; or more GPUs (--tensor-parallel-size)",
        C.DISTRIBUTED_FAILURE: "try --disable-custom-all-reduce and NCCL_P2P_DISABLE=1; check "
        "NCCL with NCCL_DEBUG=INFO",
        C.RUNTIME_CRASH: "isolate the kernel: --enforce-eager, another --attention-backend, "
        "CUDA_LAUNCH_BLOCKING=1",
        C.OOM_HOST: "lower host memory use: fewer --max-num-seqs, no --cpu-offload-gb / swap, "
        "smaller batches",
    },
)
