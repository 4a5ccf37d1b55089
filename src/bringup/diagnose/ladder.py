"""The general ladder: signals any engine's log carries, whichever engine wrote it.

Where ``rules_generic`` holds the texts CUDA, NCCL, PyTorch and the hub print, this set reads
the *kind* of a failure from signals that do not depend on one project's wording, in order
of how much they say:

1. the final Python exception, by type and the frame that raised it: ``AttributeError`` on
   a module or a library's class, ``TypeError`` about keyword or positional arguments and a
   ``NameError`` on compiled ops mean two packages of different versions (a dependency); a
   ``NoneType`` attribute is a plain crash; an exception raised while a tokenizer loads
   means the model's tokenizer files do not fit;
2. signals and exit codes written in the log (``Illegal instruction``, ``signal 4``, Windows
   status codes), since a posted or captured log often names how the process died;
3. allocator messages that say which memory ran out (prefill budgets, TensorRT's
   ``OutOfMemory``);
4. missing modules, symbols, loaders and toolchains;
5. argument validation as any parser phrases it (clap, Go's flag, llama.cpp, llamafile,
   pydantic-style ``x must be < y``) and requests longer than the configured context;
6. model files refused by format version (old GGML magic) versus files that are not a model;
7. evidence of a hang (a timeout message, "waiting for shard", a poster's "hangs").

Garbage *output* (text that is the engine's answer, not its log) is read by
:mod:`bringup.diagnose.outputtext`, which needs no keyword gate.
"""

from __future__ import annotations

from bringup.diagnose.rule import RuleSet, frame_rule, rule
from bringup.verdict import Category as C

_VERSIONS = (
    "two installed packages are of versions that do not fit together: install the versions "
    "the engine release pins (see the package named in the traceback)"
)
_CPU = (
    "the build uses CPU instructions this machine lacks (e.g. AVX2/AVX-512): use a build "
    "for this CPU"
)
_CONTEXT = (
    "the request is longer than the configured context: shorten the prompt or max tokens, "
    "or raise the context length the engine serves"
)
_ARGS = "fix the flag or value the launcher rejected (check the engine's --help)"

RULES = RuleSet(
    engine="ladder",
    rules=(
        # --- 1. the final exception: version skew between packages ------------------------
        rule(
            r"AttributeError: module '[\w.]+' has no attribute|"
            r"AttributeError: (?!'NoneType')'?[\w.]+'? (?:object )?has no attribute|"
            r"AttributeError: type object '[\w.]+' has no attribute",
            C.MISSING_DEPENDENCY,
            3.5,
            _VERSIONS,
            name="attribute-missing-version-skew",
        ),
        rule(
            r"got an unexpected keyword argument|"
            r"TypeError: .*missing \d+ required (?:positional|keyword-only) argument|"
            r"TypeError: .*takes \d+ positional arguments? but \d+ (?:was|were) given",
            C.MISSING_DEPENDENCY,
            3.5,
            _VERSIONS,
            name="call-signature-version-skew",
        ),
        rule(
            r"NameError: name '\w*(?:_C|_ops|ops|_kernels?)' is not defined",
            C.MISSING_DEPENDENCY,
            3.5,
            "the engine's compiled extension was not built or not found: reinstall the "
            "engine (or build it in place) for this Python/PyTorch",
            name="compiled-ops-missing",
        ),
        rule(
            r"AttributeError: 'NoneType' object has no attribute",
            C.RUNTIME_CRASH,
            2,
            name="none-attribute",
        ),
        rule(
            r"data did not match any variant of untagged enum",
            C.MISSING_DEPENDENCY,
            4.5,
            "the tokenizer file is newer than the installed tokenizers library: upgrade "
            "tokenizers/transformers",
            name="tokenizers-too-old",
        ),
        # --- 2. signals and exit codes named in the log -----------------------------------
        rule(
            r"Illegal instruction|\bSIGILL\b|\bsignal 4\b|signal: illegal instruction|"
            r"trap invalid opcode|0xc000001d\b|STATUS_ILLEGAL_INSTRUCTION",
            C.UNSUPPORTED_HARDWARE,
            5,
            _CPU,
            name="sigill",
        ),
        rule(
            r"\bsignal 11\b|signal: segmentation fault|0xc0000005\b|access violation|"
            r"exit status 0xc0000409|STATUS_STACK_BUFFER_OVERRUN|\bsignal 6\b|"
            r"signal: aborted",
            C.RUNTIME_CRASH,
            2.5,
            name="crash-signal",
        ),
        # a supervisor saying its worker died, without the worker's reason
        rule(
            r"runner process (?:has terminated|no longer running)|"
            r"Shard \d+ failed to start|ShardCannotStart|Shard process was signaled|"
            r"error trying to connect|Worker proc \S+ died unexpectedly|"
            r"worker (?:process )?died|process (?:exited|terminated) unexpectedly",
            C.RUNTIME_CRASH,
            1.5,
            name="worker-died",
        ),
        # a Go program's stack dump (Ollama's runner) and C/C++ assertions: it crashed
        rule(r"\.go:\d+ \+0x[0-9a-f]+", C.RUNTIME_CRASH, 1.5, name="go-stack-dump"),
        rule(
            r"\b[A-Z]+_ASSERT\b|\bAssertion [`'\"(]?.{1,200}?[`'\")]? failed|assertion failed",
            C.RUNTIME_CRASH,
            2.5,
            name="assertion-failed",
        ),
        rule(
            r"exit(?:ed)? (?:with )?(?:code|status)[: ]+(?:139|134|-11|-6)\b",
            C.RUNTIME_CRASH,
            2.5,
            name="crash-exit-code",
        ),
        rule(
            r"exit(?:ed)? (?:with )?(?:code|status)[: ]+(?:132|-4)\b",
            C.UNSUPPORTED_HARDWARE,
            4,
            _CPU,
            name="sigill-exit-code",
        ),
        rule(
            r"0xc0000135\b|3221225781\b|STATUS_DLL_NOT_FOUND",
            C.MISSING_DEPENDENCY,
            4,
            "a DLL the engine needs is missing (often the Visual C++ runtime or the CUDA "
            "runtime): install it",
            name="windows-dll-not-found",
        ),
        # --- 3. allocators that say which memory ran out ----------------------------------
        rule(
            r"Not enough memory to handle \d+ (?:prefill )?tokens|"
            r"decrease `?--max-batch-prefill-tokens",
            C.OOM_GPU,
            5,
            "the warm-up batch does not fit in GPU memory: lower --max-batch-prefill-tokens "
            "(and --max-batch-total-tokens) or use more GPUs",
            name="prefill-budget",
        ),
        rule(
            r"Error Code 2: OutOfMemory|OutOfMemory \(Requested size was|"
            r"out of (?:GPU|device|video) memory",
            C.OOM_GPU,
            5,
            name="allocator-out-of-device-memory",
        ),
        # --- 4. libraries, loaders, drivers and toolchains --------------------------------
        rule(
            r"failed to map segment from shared object|Unable to load dynamic (?:server )?library|"
            r"cannot load library|could not load library",
            C.MISSING_DEPENDENCY,
            4,
            "a shared library could not be loaded (missing, wrong version, or a noexec "
            "temporary directory): reinstall, or point the temp dir at an executable mount",
            name="library-load",
        ),
        rule(
            r"forward compatibility was attempted on non supported HW|"
            r"cudaErrorCompatNotSupportedOnDevice|Unexpected error from cudaGetDeviceCount|"
            r"nvidia-container-cli: requirement error|unsatisfied condition: cuda|"
            r"please update your (?:GPU |NVIDIA )?driver|"
            r"driver version is (?:too old|insufficient)",
            C.MISSING_DEPENDENCY,
            4.5,
            "the GPU driver does not fit the CUDA build of the engine or image: update the "
            "driver or use an image built for this driver's CUDA version",
            name="driver-cuda-mismatch",
        ),
        rule(
            r"Command '\[?['\"]?[^'\"]*(?:gcc|g\+\+|cc|clang|nvcc|ninja|c\+\+)['\"].*"
            r"returned non-zero exit status|error: command '[^']*(?:gcc|nvcc|cl\.exe)' failed|"
            r"(?:gcc|nvcc|clang): (?:error|fatal error):",
            C.MISSING_DEPENDENCY,
            3.5,
            "a kernel compile failed: install the C/CUDA toolchain and headers the JIT "
            "needs (gcc, python3-dev, CUDA toolkit)",
            name="toolchain-failed",
        ),
        # --- CUDA and ROCm error names that say more than "a CUDA error" ---------------
        rule(
            r"Torch not compiled with CUDA enabled|cudaErrorInsufficientDriver|"
            r"cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE|CUDA_ERROR_NOT_INITIALIZED|"
            r"failed to initialize CUDA|HSA_STATUS_ERROR_OUT_OF_RESOURCES.*init",
            C.MISSING_DEPENDENCY,
            4.5,
            "the engine cannot reach a GPU through CUDA/ROCm: install the GPU build of the "
            "framework and a driver that fits it, and check the device is visible",
            name="gpu-runtime-unavailable",
        ),
        rule(
            r"invalid device ordinal|cudaErrorInvalidDevice\b",
            C.INVALID_CONFIG,
            4.5,
            "the configuration asks for more GPUs (or another GPU index) than are visible: "
            "lower the parallel size or fix CUDA_VISIBLE_DEVICES",
            name="gpu-index-not-visible",
        ),
        rule(
            r"OutOfResources: out of resource: shared memory|"
            r"CUBLAS_STATUS_NOT_SUPPORTED|CUDNN_STATUS_NOT_SUPPORTED|"
            r"cudaErrorUnsupportedPtxVersion|cudaErrorNotSupported",
            C.UNSUPPORTED_HARDWARE,
            4,
            "the kernel's configuration does not fit this GPU: choose another backend "
            "or kernel, or a GPU it was written for",
            name="kernel-does-not-fit-gpu",
        ),
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
            r"\b\w*(?:max|min|num|size|len|tokens)\w* must be (?:<=?|>=?|less|greater|at "
            r"(?:most|least))",
            C.INVALID_CONFIG,
            4.5,
            "one setting must stay below another (e.g. max input tokens below max total "
            "tokens): change the values the message names",
            name="bound-validation",
        ),
        rule(
            r"is longer than the (?:model's )?(?:maximum )?context length|"
            r"maximum context length is \d+ tokens|"
            r"exceeds? (?:the )?(?:model's |available )?(?:maximum )?(?:context|max_model_len|"
            r"max_seq_len|n_ctx)\b|"
            r"(?:prompt|input|request) (?:is )?too long|"
            r"(?:prompt|input)(?: length)? \(?\d+(?: tokens)?\)? (?:exceeds|is longer than|"
            r"is larger than)",
            C.INVALID_CONFIG,
            4.5,
            _CONTEXT,
            name="request-longer-than-context",
        ),
        rule(
            r"cannot assign requested address|\[Errno 99\]|EADDRNOTAVAIL",
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
            r"world size \(?\d+\)? (?:does not|doesn't) (?:match|equal)",
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
            r"invalid file magic|not a valid GGUF|failed to parse GGUF",
            C.MODEL_LOAD_FAILURE,
            4.5,
            "the file is not a model file (an HTML page, a git-lfs pointer, a partial "
            "download or safetensors where GGUF is expected): fetch the real file",
            name="file-not-a-model",
        ),
        rule(
            r"max retries exceeded|error pulling|failed to (?:download|fetch) (?:the )?"
            r"(?:model|weights|file|manifest)|download (?:failed|interrupted)",
            C.MODEL_LOAD_FAILURE,
            4,
            "the model download failed: retry, check the network/proxy, or pre-download",
            name="download-failed",
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
            r"no (?:weight|tensor) named [\w.'\"]+ in|cannot find tensor [\w.'\"]+",
            C.MODEL_INCOMPATIBLE,
            4.5,
            "the checkpoint's weight names do not match this engine's model code: use a "
            "checkpoint layout/architecture the engine supports",
            name="weight-name-missing",
        ),
        rule(
            r"architectures? \[?[\w', ]*\]? (?:are|is) not (?:yet )?supported|"
            r"(?:sharded|sharding|tensor parallel(?:ism)?) is not supported for|"
            r"(?:does not|doesn't) support head ?dim",
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
        # --- 7. evidence of a hang --------------------------------------------------------
        rule(
            r"<\s*hangs?\b|\bhangs? (?:for|forever|at|after|indefinitely)|"
            r"\b(?:is|gets|got|stays?) stuck\b|Waiting for shard (?:\d+ )?to be ready|"
            r"taken more than \d+s to initialize|timed out waiting for|"
            r"never (?:becomes|became) (?:ready|healthy)",
            C.STARTUP_TIMEOUT_OR_HANG,
            3,
            "the engine stopped making progress: see the stage it reached, raise the start "
            "timeout if it is only slow, or look at what it waits on",
            name="hang-evidence",
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
            r"\bis required when\b|\bconflicts? with\b",
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
    ),
    frame_rules=(
        # the model type is not in the (too old) library's mapping
        frame_rule(
            r"KeyError|ValueError",
            r"configuration_auto|CONFIG_MAPPING|model_registry|:resolve_model_cls",
            C.MODEL_INCOMPATIBLE,
            3,
            "the installed library does not know this model type: a newer engine or "
            "transformers, or --trust-remote-code",
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
    ),
)
