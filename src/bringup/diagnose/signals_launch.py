"""The ladder's launch half: what the launch refused, whichever engine refused it.

Argument validation as any parser phrases it and requests longer than the context; model
files refused by format version versus files that are not a model; evidence of a hang; and,
weakest, the vocabulary of a message no rule knows (which noun refused, with which verb).
Assembled with :mod:`bringup.diagnose.signals_runtime` by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import FrameRule, Rule, frame_rule, not_advised, rule
from bringup.verdict import Category as C

_CONTEXT = (
    "the request is longer than the configured context: shorten the prompt or max tokens, "
    "or raise the context length the engine serves"
)
_ARGS = "fix the flag or value the launcher rejected (check the engine's --help)"

RULES: tuple[Rule, ...] = (
    # --- 5. argument validation, whatever the parser ---------------------------------
    rule(
        r"error: invalid value '[^']*' for '-{1,2}[\w-]+|"
        r"error: unexpected argument '-{1,2}[\w-]+'|Found argument '[^']+' which wasn't "
        r"expected|flag provided but not defined: -|-{1,2}[\w-]+:? unknown argument|"
        r"invalid parameter for argument|failed to parse flags|"
        r"unknown (?:option|flag|argument)s?:? '?-{1,2}[\w-]+|unrecognized option '?-",
        C.INVALID_CONFIG,
        5,
        _ARGS,
        name="cli-rejected",
    ),
    rule(
        r"ArgumentValidation|`\w+`\s*(?:\(\d+\)\s*)?must be (?:<=?|>=?|lower|greater|smaller|"
        r"larger|less|at (?:most|least)|strictly)|"
        r"\b\w*(?:max|min|num|size|len|tokens)\w* (?:\(\d+\) )?must be (?:<=?|>=?|less|"
        r"greater|at (?:most|least))",
        C.INVALID_CONFIG,
        4.5,
        "one setting must stay below another (e.g. max input tokens below max total "
        "tokens): change the values the message names",
        name="bound-validation",
    ),
    rule(
        r"is longer than the (?:model's )?(?:maximum )?context length|"
        r"maximum context length is \d+ tokens|"
        r"exceed(?:s|ed)? (?:the )?(?:model's |available )?(?:maximum )?(?:context|max_model_len|"
        r"max_seq_len|n_ctx)\b|"
        r"(?:prompt|input|request) (?:is )?too long|"
        r"\bmust have (?:less|fewer) than \d+ tokens|"
        r"is longer than the maximum model length|"
        r"(?:has )?exceeded the maximum (?:sequence|input|model) length|"
        r"(?:prompt|input)(?: length)? \(?\d+(?: tokens)?\)? (?:exceeds|is longer than|"
        r"is larger than)",
        C.INVALID_CONFIG,
        4.5,
        _CONTEXT,
        name="request-longer-than-context",
    ),
    # pydantic's own wording for a value a settings model refused
    rule(
        r"Input should be (?:a valid|greater|less|one of|an? )|Extra inputs are not permitted",
        C.INVALID_CONFIG,
        4,
        "a setting has a value (or a name) the engine's settings model refuses: fix the "
        "field the message names",
        name="settings-model-refused",
    ),
    # the wrapper around it ("1 validation error for ParallelConfig", "Value error, ..." a
    # validator raised): a settings model refused something, a kind of failure; the
    # wrapped message names the cause (a missing library, an unknown architecture) and
    # decides when a rule knows it, else the refusal stays a guessed invalid_config
    rule(
        r"validation errors? for [\w.]+|^Value error, ",
        C.INVALID_CONFIG,
        1.5,
        "a setting has a value the engine's settings model refuses: fix the field the "
        "message under the validation error names",
        name="settings-model-wrapper",
        consequence=True,
    ),
    rule(
        # a bind's errno; on a line where a client fails to *connect* it is the peer's
        # address that is not reachable from here, which the distributed rules read
        r"^(?!.*\b(?:fail(?:s|ed)? to connect|client socket|connect\(\))).*?"
        r"(?:cannot assign requested address|\[Errno 99\]|EADDRNOTAVAIL)",
        C.INVALID_CONFIG,
        5,
        "the host address to bind is not on this machine (or IPv6 is off): bind "
        "127.0.0.1 or an address this host has",
        name="bind-address-not-here",
    ),
    rule(
        r"listen tcp [\w.:\[\]-]*:\d+: bind: |bind\(\) to [\w.:]+ failed|"
        r"only one usage of each socket address",
        C.PORT_IN_USE,
        4,
        "another process holds the port: stop it or let bringup pick a free port",
        name="listen-bind-failed",
    ),
    # parallel sizes that do not multiply to the number of ranks
    rule(
        r"(?:mpi_?size|world_?size|num_?gpus|n_?ranks)\s*==\s*\w*(?:tp|pp|parallel)\w*\s*\*|"
        r"world size \(?\d+\)? (?:does not|doesn't) (?:match|equal)|"
        r"\bexpected (?:mpi |MPI )?world[ _]size\b[^.\n]{0,40}?\bgot\b|"
        # Open MPI asked for more ranks than the machine has slots for
        r"\bnot enough slots available in the system to satisfy\b",
        C.INVALID_CONFIG,
        4.5,
        "the number of ranks must equal tensor x pipeline parallel size: launch as many "
        "ranks as tp*pp, or change the parallel sizes",
        name="world-size-mismatch",
    ),
    rule(
        r"Failed: MPI error|MPI_ERR_\w+|MPI error \d+",
        C.DISTRIBUTED_FAILURE,
        4.5,
        "MPI between ranks failed: check the MPI launch (mpirun -n, UCX/OMPI settings) "
        "and the interconnect",
        name="mpi-error",
    ),
    # CUDA initialised before the engine forked its workers: the start method is a setting
    rule(
        r"Cannot re-initialize CUDA in forked subprocess",
        C.INVALID_CONFIG,
        4.5,
        "CUDA was initialised before the workers were forked: use the spawn start method "
        "(VLLM_WORKER_MULTIPROC_METHOD=spawn) and do not touch CUDA before the engine starts",
        name="cuda-before-fork",
    ),
    # --- 6. model files: refused format version vs not a model at all ----------------
    rule(
        r"unknown \(magic, version\) combination|is this really a GGML file|"
        r"bad magic \[got 0x[0-9a-f]+ want|invalid model file .*\(bad magic|"
        r"(?:too old|unsupported) (?:GGML|GGUF|model file) (?:format|version)|"
        r"this format is no longer supported",
        C.MODEL_INCOMPATIBLE,
        5.5,
        "the file's format version does not match this loader (old GGML vs GGUF): "
        "convert the model for this build, or use the build of its era",
        name="model-format-version",
    ),
    rule(
        r"invalid ggml type|(?:unknown|unrecognized) (?:ggml |tensor )?type \d+|"
        r"GGUF version \d+ is not supported|"
        r"unsupported (?:tensor|ggml|quant(?:ization)?) type",
        C.MODEL_INCOMPATIBLE,
        5.5,  # above the "failed to read tensor info" it causes
        "the file uses a tensor type or format version this build does not know: a newer "
        "build, or a file quantized for this one",
        name="tensor-type-unknown",
    ),
    # a GGUF with metadata and no tensors: a vocabulary-only file, or a broken one
    rule(
        r"\bkey-value pairs and 0 tensors from\b",
        C.MODEL_LOAD_FAILURE,
        4,
        "the file holds no tensors (a vocabulary-only GGUF, or a broken download): point at "
        "the model's weights file",
        name="gguf-without-tensors",
    ),
    rule(
        r"invalid file magic|not a valid GGUF|failed to parse GGUF|not in GGUF format|"
        r"is not a GGUF file",
        C.MODEL_LOAD_FAILURE,
        4.5,
        "the file is not a model file (an HTML page, a git-lfs pointer, a partial "
        "download or safetensors where GGUF is expected): fetch the real file",
        name="file-not-a-model",
    ),
    rule(
        r"max retries exceeded|error pulling|failed to (?:download|fetch) (?:the )?"
        r"(?:model|weights|file|manifest)|download (?:failed|interrupted)|\bDownloadError\b|"
        r"Download encountered an error|download\w*: invalid http status code received: 4\d\d",
        C.MODEL_LOAD_FAILURE,
        4,
        "the model download failed: retry, check the network/proxy, or pre-download",
        name="download-failed",
    ),
    rule(
        r"Cannot find any model weights|No model weights found|"
        r"no safetensors or torch files found|"
        # Ollama's create: a folder with neither a Modelfile nor weights
        r"\bno (?:Modelfile|model files?|weights?)(?: or (?:safetensors|gguf|weights?|model)"
        r"(?: files?)?)? (?:files? )?(?:were )?found\b|"
        # a model path that is a folder where a file was read (Ollama's FROM, a GGUF flag)
        r"\bread [^\s:]+: is a directory\b|"
        r"No supported config format found in|is not a valid JSON file|"
        r"(?:failed|unable) to load (?:the )?tokenizer\b",
        C.MODEL_LOAD_FAILURE,
        4,
        "the model directory lacks readable weights, config or tokenizer: check the path "
        "and that the download is complete",
        name="model-files-missing",
    ),
    rule(
        r"Permission denied.{0,40}(?:\.gguf|\.safetensors|config\.json|/models?/|"
        r"huggingface|\.bin\b)",
        C.MODEL_LOAD_FAILURE,
        4,
        "the engine may not read the model files: fix their ownership/permissions (or the "
        "volume's mount options)",
        name="model-files-not-readable",
    ),
    rule(
        r"Invalid repository ID or local directory",
        C.MODEL_LOAD_FAILURE,
        5.5,
        "check the model path/name and access (accept the licence, log in to the hub, "
        "or point at a local copy)",
        name="model-path-invalid",
    ),
    rule(
        r"weight [\w.]+ does not exist|(?:Missing|Unexpected) key\(?s\)? in state_dict|"
        r"no (?:weight|tensor) named [\w.'\"]+ in|cannot find tensor [\w.'\"]+|"
        r"\bmissing [\w.]+ tensor\b|\bmissing tensor [\w.'\"]+",
        C.MODEL_INCOMPATIBLE,
        4.5,
        "the checkpoint's weight names do not match this engine's model code: use a "
        "checkpoint layout/architecture the engine supports",
        name="weight-name-missing",
    ),
    rule(
        r"architectures? \[?[\w', ]*\]? (?:are|is) not (?:yet )?supported|"
        r"(?:sharded|sharding|tensor parallel(?:ism)?) is not supported for|"
        r"(?:does not|doesn't) support head ?dim|"
        r"\b(?:this|the) model is (?:unknown|unsupported|not supported)(?: or (?:unknown|"
        r"unsupported|not supported))?\b(?! (?:with|when|together|in combination|alongside|on|"
        r"for)\b)",
        C.MODEL_INCOMPATIBLE,
        4.5,
        name="model-not-supported",
    ),
    rule(
        r"not supported (?:in|on|by) (?:this|your|the current) (?:architecture|GPU|device|"
        r"hardware|platform)|\b(?:amd)?gpu is not supported|gfx\d+\w* (?:is )?not supported|"
        r"fp8e4nv not supported|requires Flash Attention enabled models",
        C.UNSUPPORTED_HARDWARE,
        5,
        "no kernel for this GPU: choose a backend, dtype or build that supports it",
        name="no-kernel-for-this-gpu",
    ),
    # the same refusal after the flash-attention models failed to import for want of a
    # module: the install lacks the kernels, whatever the GPU
    rule(
        r"requires Flash Attention enabled models",
        C.MISSING_DEPENDENCY,
        5.5,
        "the flash-attention kernels of this install did not import (a module is missing): "
        "install the server's kernels (its image, or its built extensions) for this GPU",
        name="flash-attention-models-not-installed",
        also=r"Could not import Flash Attention enabled models: (?:No module named|cannot import "
        r"name|Flash Attention is not installed)",
    ),
    # ranks waiting on each other for a message that never comes (vLLM's shared-memory
    # broadcast between its workers): a hang, as it says
    rule(
        r"No available shared memory broadcast block found in \d+ seconds?",
        C.STARTUP_TIMEOUT_OR_HANG,
        4.5,
        "a worker stopped answering the others (hung in a collective, a compile or a kernel): "
        "see the last lines of each rank; --disable-custom-all-reduce, or NCCL_DEBUG=INFO",
        name="ranks-waiting-on-a-broadcast",
    ),
    # --- 7. evidence of a hang --------------------------------------------------------
    # stuck while the ranks set up their communicators: the hang is the ranks' (one node
    # cannot reach another, a firewall, a wrong interface), not the engine's
    rule(
        r"(?:stuck|hangs?|hanging|frozen|freezes|blocked|waits? forever)\b[^\n]{0,40}?"
        r"(?:Init torch distributed|init_process_group|init(?:ializing)? (?:the )?"
        r"(?:NCCL|distributed|process group)|torch\.distributed|ncclCommInitRank)",
        C.DISTRIBUTED_FAILURE,
        3.3,
        "the ranks never finished setting up their communicators: check every node reaches "
        "the master address and port, and the network interface NCCL/Gloo use "
        "(NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME)",
        name="stuck-setting-up-the-ranks",
    ),
    rule(
        r"<\s*hangs?\b|\bhangs? (?:for|forever|at|after|indefinitely)|"
        r"\b(?:is|gets|got|stays?) stuck\b|Waiting for shard (?:\d+ )?to be ready|"
        r"taken more than \d+s to initialize|timed? ?out waiting for|"
        r"never (?:becomes|became) (?:ready|healthy)|"
        r"\b(?:hung|freezes|froze)\b (?:at|on|after|while|forever|for|here|indefinitely|up)\b|"
        r"blocked for more than \d+ seconds",
        C.STARTUP_TIMEOUT_OR_HANG,
        3,
        "the engine stopped making progress: see the stage it reached, raise the start "
        "timeout if it is only slow, or look at what it waits on",
        name="hang-evidence",
    ),
    # a router or launcher polling a worker's /health that has not answered yet: the
    # worker is still starting (compiling, loading) or stuck there
    rule(
        r"\bhealth ?check (?:is |still )?pending\b|"
        r"\bwaiting for (?:the )?(?:worker|server|engine)s? [^\n]{0,60}?to become healthy\b",
        C.STARTUP_TIMEOUT_OR_HANG,
        2.5,
        "the workers never answered their health check: see how far each worker's own "
        "log got, and raise the router's worker start-up timeout if it is only slow",
        name="health-check-still-pending",
    ),
    # a timeout with no collective named (NCCL/gloo timeouts score higher above)
    rule(
        r"\bTimeoutError\b|\btimed out after \d+|\btimeout (?:after|of \d|expired|reached)|"
        r"\bReadTimeout\b|deadline exceeded",
        C.STARTUP_TIMEOUT_OR_HANG,
        2.5,
        "something the engine waited on never answered: see what it waited on (the "
        "lines before), raise the timeout if it is only slow",
        name="timeout",
    ),
    # a client's read that timed out (Node's "read ETIMEDOUT", Go's "read: i/o timeout"): the
    # server took the request and no answer came (a rule of its own: its literals gate it)
    rule(
        r"\bread(?: tcp [^\n]{0,80})?: (?:ETIMEDOUT|i/o timeout)\b|\bread ETIMEDOUT\b",
        C.STARTUP_TIMEOUT_OR_HANG,
        2.5,
        "the client waited for an answer that never came: see what the server was doing "
        "then (its own log), raise the client's timeout if it is only slow",
        name="client-read-timed-out",
    ),
    # --- 8. the message's own vocabulary, when no wording above is known -------------
    # Weaker than every rule above (2-2.5, x1.3 on a final exception line), stronger
    # than "an error happened": the noun and verb of an unknown message still say which
    # part of the launch refused.
    rule(
        r"\b(?:model|architecture|checkpoint|quantization|tokenizer|format|layer|rope)"
        r"(?:[_ ]type)?s?\b[^.]{0,80}?\b(?:is |are )?(?:not (?:yet )?supported|unsupported|"
        r"not implemented|not recogni[sz]ed)|"
        r"\b(?:unsupported|unknown|unrecogni[sz]ed) (?:model|architecture|quantization|"
        r"tokenizer|rope|checkpoint|weight)",
        C.MODEL_INCOMPATIBLE,
        2.2,
        name="message-model-refused",
    ),
    rule(
        r"\b(?:invalid|unknown|unrecogni[sz]ed|unsupported) (?:argument|option|flag|value|"
        r"parameter|setting|choice|config(?:uration)?|combination)|"
        r"\bmust be (?:one of|a positive|positive|non-negative|between|in \[|set to)|"
        r"\bexpected one of\b|\bis not a valid\b|\bcannot be (?:used|set|combined|enabled)|"
        r"\bis required when\b|\bconflicts? with\b|"
        r"\bmust be [\w.-]+ (?:when|if) (?:using|enabling|running|with)\b|"
        r"\bis not allowed (?:with|when|for|in|together)\b|\bcannot both be\b|"
        r"\bonly one of .{1,80}? (?:can|may|should|must) be (?:set|specified|used|given|enabled)",
        C.INVALID_CONFIG,
        2.2,
        name="message-setting-refused",
    ),
    rule(
        r"\b(?:model|config|tokenizer|weights?|checkpoint|safetensors|file|path|directory|"
        r"repo(?:sitory)?)\b[^.]{0,80}?\b(?:not found|does not exist|doesn't exist|"
        r"could not be found|cannot be found|is missing)",
        C.MODEL_LOAD_FAILURE,
        2.2,
        name="message-file-missing",
    ),
    # a poster's own words for running out of memory: the kernel's OOM killer or the
    # machine's RAM is host memory, anything else (VRAM, "OOM" alone) the GPU's
    rule(
        r"\bOOM[- ]?kill(?:ed|er|s)?\b|"
        # the kernel's log (dmesg) is where only the host's OOM killer writes
        r"\bdmesg\b[^\n]{0,80}\bOOM\b|"
        r"\b(?:out of|runs? out of|ran out of) (?:system |host |CPU )?RAM\b|"
        r"\b(?:out of|runs? out of|ran out of|exhaust\w*) (?:system|host|CPU) memory\b",
        C.OOM_HOST,
        2.2,
        name="message-host-memory-ran-out",
    ),
    rule(
        not_advised(r"\b(?:out of|running out of) (?:GPU |device )?(?:VRAM|memory)\b")
        + r"(?:\b(?:out of|runs? out of|ran out of|exhaust\w*) (?:GPU |device |video )?"
        r"(?:VRAM|memory)\b(?!: Kill)|"
        r"\bgets? (?:an? )?OOM\b|\bOOM(?:s|ed)?\b(?![- ]?kill)|"
        r"\b(?:too large|too big) to fit (?:in|into|on) (?:the )?(?:available )?(?:GPU |device )?"
        r"(?:memory|VRAM)|\b(?:not enough|insufficient) (?:GPU |video )?(?:VRAM|GPU memory))",
        C.OOM_GPU,
        2.0,
        name="message-memory-ran-out",
    ),
    # "the (GPU) memory is not sufficient", as a poster words it (a rule of its own: its
    # literals gate it off the many lines that say "memory" and "not")
    rule(
        r"\b(?:memory|VRAM) (?:is|was) not (?:sufficient|enough)\b",
        C.OOM_GPU,
        2.0,
        name="message-memory-not-sufficient",
    ),
    # a poster's own words for output that loops: the text is the fault, not a crash
    rule(
        r"\b(?:infinite|endless|never[- ]ending)\b[^.]{0,40}?\b(?:output|tokens?|characters?|"
        r"text|repetition|loop)|\brepeat(?:s|ing|ed)?\b[^.]{0,30}?\b(?:the same|itself|"
        r"endlessly|forever)\b|\bover and over\b",
        C.GARBAGE_OUTPUT,
        2.2,
        name="message-output-loops",
    ),
    # an allocation that names only what it was for: GPU buffers and the KV cache live on
    # the device; pinned memory and CPU buffers on the host
    rule(
        r"\bfailed to allocate [\d.]+ ?[KMG]i?B of pinned (?:host )?memory|"
        r"\bcannot allocate (?:pinned|host) memory",
        C.OOM_HOST,
        4,
        name="pinned-memory-allocation-failed",
    ),
    rule(
        r"\bfailed to allocate (?:the )?(?:buffer|memory) for "
        r"(?:the )?(?:kv ?cache|KV self|context)|"
        r"\bfailed to allocate (?:compute|kv|KV)(?: \w+)? buffers?",
        C.OOM_GPU,
        3.5,
        name="context-buffer-allocation-failed",
    ),
)

FRAME_RULES: tuple[FrameRule, ...] = (
    # the model type is not in the (too old) library's mapping
    frame_rule(
        r"KeyError|ValueError",
        r"configuration_auto|CONFIG_MAPPING|model_registry|:resolve_model_cls",
        C.MODEL_INCOMPATIBLE,
        3,
        "the installed library does not know this model type: a newer engine or "
        "transformers, or --trust-remote-code",
    ),
    # the checkpoint converter met a tensor layout it does not know
    frame_rule(
        r"KeyError|AssertionError|ValueError",
        r"convert_checkpoint|:from_hugging_face|:convert_hf\w*|:load_from_hf\w*",
        C.MODEL_INCOMPATIBLE,
        2.5,
        "the checkpoint layout does not match what the converter expects: a checkpoint of a "
        "supported architecture, or a newer engine",
    ),
    # validation code rejected a setting
    frame_rule(
        r"ValueError|AssertionError|TypeError|NotImplementedError|ValidationError",
        r":_?(?:validate|verify)\w*|/(?:args|cli_args|engine_args|arg_utils)\.py|"
        r":parse_args|:from_cli_args",
        C.INVALID_CONFIG,
        2.5,
    ),
    # a tokenizer that cannot be built from the model's files
    frame_rule(
        r"TypeError|OSError|ValueError|RuntimeError|Exception",
        r"sentencepiece|tokenization_\w+\.py:__init__|LoadFromFile",
        C.MODEL_INCOMPATIBLE,
        2.5,
        "the model's tokenizer files do not fit the tokenizer class: check the "
        "tokenizer files, or pass the matching tokenizer",
    ),
    # an exception raised while picking the model implementation
    frame_rule(
        r"NotImplementedError|ValueError",
        r"models/__init__\.py:get_model|model_registry|:get_model_architecture",
        C.MODEL_INCOMPATIBLE,
        2.5,
    ),
    # the frame that raised is a check of what the GPU can do (dtype, compute capability);
    # also read in a traceback posted without its exception line (type "")
    frame_rule(
        r"|ValueError|RuntimeError|NotImplementedError|AssertionError",
        r":_?(?:check|verify|assert|ensure)\w*(?:gpu|device|capabilit|hardware|compute)\w*",
        C.UNSUPPORTED_HARDWARE,
        2.5,
        "the engine checked what this GPU can do and refused it: a dtype, kernel or "
        "backend this GPU supports (e.g. --dtype half on pre-Ampere GPUs)",
    ),
    # a traceback cut before its exception, last seen setting up the ranks
    frame_rule(
        r"",
        r":(?:init_distributed\w*|init_process_group|initialize_model_parallel|"
        r"init_torch_distributed|ncclCommInitRank|\w*all_reduce|\w*all_gather)",
        C.DISTRIBUTED_FAILURE,
        2.0,
    ),
)
