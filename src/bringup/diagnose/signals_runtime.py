"""The ladder's runtime half: how the process failed, from signals any engine's log carries.

The final Python exception by type (version skew between packages, a plain ``NoneType``
crash), signals and exit codes written in the log, assertion and stack-dump lines (Go's,
ggml's backtrace, .NET's wrapper of a native crash, a Windows debugger's call stack),
allocators that say which memory ran out, libraries, loaders, drivers and toolchains, and
CUDA/ROCm error names that say more than "a CUDA error". Assembled with
:mod:`bringup.diagnose.signals_launch` into one rule set by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

_VERSIONS = (
    "two installed packages are of versions that do not fit together: install the versions "
    "the engine release pins (see the package named in the traceback)"
)
_CPU = (
    "the build uses CPU instructions this machine lacks (e.g. AVX2/AVX-512): use a build "
    "for this CPU"
)

RULES: tuple[Rule, ...] = (
    # --- 1. the final exception: version skew between packages ------------------------
    # the object lacking the attribute is the model's config: the model, not a package
    rule(
        r"AttributeError: '\w*Config' object has no attribute",
        C.MODEL_INCOMPATIBLE,
        4,
        "the model's config lacks a field this engine's model code reads: a checkpoint "
        "of the architecture the engine supports, or a newer engine",
        name="config-attribute-missing",
    ),
    # a layer of the model code lacks a quantization parameter the checkpoint's method
    # needs (scales, zero points, packed weights): the checkpoint's quantization layout is
    # not the one this code loads
    rule(
        r"'\w*(?:Linear|Layer|Attention|MoE|Experts?|Embedding|Conv\w*)' object has no "
        r"attribute '\w*(?:scale|zero|zeros|qweight|g_idx|scales|bias|weight_packed|"
        r"quant\w*)'",
        C.MODEL_INCOMPATIBLE,
        4,
        "the model code has no place for the checkpoint's quantization parameters: a "
        "checkpoint quantized with a method this version loads, or a newer engine",
        name="layer-lacks-quantization-parameter",
    ),
    # a module or a class lacking a name is two packages of versions that do not fit
    rule(
        r"AttributeError: module '[\w.]+' has no attribute|"
        r"AttributeError: type object '[\w.]+' has no attribute|"
        r"AttributeError: [\w.]+ has no attribute",
        C.MISSING_DEPENDENCY,
        3.5,
        _VERSIONS,
        name="attribute-missing-version-skew",
    ),
    # an *instance* of the engine's own class lacking one is most often the engine's own
    # code path that never set it (a feature combination it does not cover): a crash, as a
    # guess, since skew between two packages reads the same (in the read corpus 4 of 9 such
    # lines were crashes, 3 the model, 1 a dependency)
    rule(
        r"AttributeError: (?!'NoneType')'[\w.]+' object has no attribute",
        C.RUNTIME_CRASH,
        1.8,
        "the engine's code reached an object without the field it needs (a feature "
        "combination this version does not cover): try without the feature the traceback "
        "names, or another engine version",
        name="attribute-missing-on-an-object",
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
    # the exception type alone, when no rule knows its message: at start-up engines raise
    # ValueError on a value they refuse (a model's, when the message names the model) and
    # NotImplementedError on a model their code does not cover: neither is a crash of the
    # engine. Just above the "a traceback happened" catch-all. (A KeyError is a crash
    # unless the frame that raised it says otherwise: the frame rules read it.)
    rule(
        r"^(?:[\w.]+\.)?ValueError: (?=.*\b(?:model|architecture|checkpoint|config\.json|"
        r"quantization|weights?|tokenizer|vocab|layers?|model_type)\b)",
        C.MODEL_INCOMPATIBLE,
        1.6,
        name="value-error-about-the-model",
    ),
    # a ValueError that names a command-line flag is about that setting, whatever noun
    rule(
        r"^(?:[\w.]+\.)?ValueError: (?=.*(?:^|[\s`'\"(])--[a-z])",
        C.INVALID_CONFIG,
        1.7,
        "a value the engine refuses: change the flag the message names",
        name="value-error-naming-a-flag",
    ),
    rule(
        r"^(?:[\w.]+\.)?ValueError: ",
        C.INVALID_CONFIG,
        1.4,
        "a value the engine refuses: change the setting (or input) the message names",
        name="value-error",
    ),
    rule(
        r"^(?:[\w.]+\.)?NotImplementedError\b",
        C.MODEL_INCOMPATIBLE,
        1.5,
        name="not-implemented-for-the-model",
    ),
    rule(
        r"AttributeError: 'NoneType' object has no attribute",
        C.RUNTIME_CRASH,
        2,
        name="none-attribute",
    ),
    # arithmetic and shapes gone wrong inside the engine, quoted with or without the
    # exception's type: a crash in its code (a loader's shape check reads by its frame)
    rule(
        r"\b(?:integer |float )?division (?:or modulo )?by zero\b|"
        r"\bThe size of tensor a \(\d+\) must match the size of tensor b \(\d+\)",
        C.RUNTIME_CRASH,
        2.4,
        name="arithmetic-or-shape-error",
    ),
    # a collective given tensors of sizes the ranks do not agree on ("must be world_size
    # times the size of the input", "input tensor size ... world_size"): the ranks differ
    rule(
        r"\b(?:must be|should be|is not)\s+(?:equal to\s+)?world_size times\b|"
        r"\b(?:all_?gather|reduce_?scatter)\w*\b[^\n]{0,80}?\bworld_size\b",
        C.DISTRIBUTED_FAILURE,
        4,
        "the ranks passed a collective tensors of sizes that do not agree: every rank must "
        "run the same model, parallel sizes and batch shapes",
        name="collective-sizes-differ",
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
        r"signal: aborted|\bAbort trap\b|terminating due to uncaught exception|"
        r"terminating with uncaught exception",
        C.RUNTIME_CRASH,
        2.5,
        name="crash-signal",
    ),
    # a supervisor saying its worker died, without the worker's reason
    rule(
        r"runner process (?:has terminated|no longer running)|"
        r"Shard \d+ failed to start|ShardCannotStart|Shard process was signaled|"
        r"error trying to connect|Worker proc \S+ died unexpectedly|ChildFailedError|"
        r"worker (?:process )?died|process (?:exited|terminated) unexpectedly",
        C.RUNTIME_CRASH,
        1.5,
        name="worker-died",
    ),
    # a Go program's stack dump (Ollama's runner) and C/C++ assertions: it crashed
    rule(r"\.go:\d+ \+0x[0-9a-f]+", C.RUNTIME_CRASH, 1.5, name="go-stack-dump"),
    # native stack dumps of a process that aborted: ggml's own backtrace (GGML_ABORT and
    # failed asserts print it), .NET's wrapper of a native crash (LLamaSharp and other
    # bindings), a Windows debugger's call stack (``llama.dll!fn(...) Line 123``)
    rule(
        r"\bggml_print_backtrace\b|\bggml_abort\b|"
        r"\bSEHException\b|\bExternal component has thrown an exception\b|"
        r"\bSystem\.AccessViolationException\b|"
        r"\b[\w.-]+\.(?:dll|exe)!\w[\w:~<>]*\([^\n]*\) Line \d+",
        C.RUNTIME_CRASH,
        2.2,
        name="native-stack-dump",
    ),
    # a panic of the Rust (TGI's router and launcher) or Go runtime: the process died; any
    # cause named on the same line (out of memory, a refused model) scores on its own
    rule(
        r"thread '[^']*' panicked at|^panic: runtime error:|"
        r"^fatal error: (?:unexpected signal|concurrent map)|Fatal Python error: Aborted",
        C.RUNTIME_CRASH,
        2.5,
        name="runtime-panic",
    ),
    # a bare assertion with no message: something the code assumed did not hold
    rule(r"^AssertionError\s*$", C.RUNTIME_CRASH, 1.5, case=True, name="bare-assertion"),
    # a kernel launched with a shape or register count the code did not plan for: a bug
    # in the kernel's launch, not a setting of the engine
    rule(
        r"invalid configuration argument|cudaErrorInvalidConfiguration",
        C.RUNTIME_CRASH,
        3.5,
        name="kernel-launch-configuration",
    ),
    rule(
        r"too many resources requested for launch|cudaErrorLaunchOutOfResources",
        C.UNSUPPORTED_HARDWARE,
        3,
        "a kernel needs more registers or shared memory than this GPU has: a build or "
        "backend for this GPU",
        name="kernel-exceeds-gpu-resources",
    ),
    # pip could not install what the engine needs
    rule(
        r"Could not find a version that satisfies the requirement|"
        r"No matching distribution found for|subprocess-exited-with-error|"
        r"Failed building wheel for|Failed to build installable wheels",
        C.MISSING_DEPENDENCY,
        3.5,
        "installing a package failed: install a release with wheels for this Python, "
        "CUDA and PyTorch, or the build tools it needs",
        name="pip-install-failed",
    ),
    # native frames of an MPI collective in a crash dump: the ranks' communication failed
    rule(
        r"\blibmpi\.so|\bMPI_(?:Bcast|Allreduce|Allgather|Barrier|Recv|Send|Wait\w*)\b|"
        r"\bompi_(?:coll|request|sync)\w*",
        C.DISTRIBUTED_FAILURE,
        1.5,
        case=True,
        name="mpi-collective-frames",
    ),
    # a debugger's thread dump stopped inside a collective: the ranks wait on each other
    rule(
        r"^#\d+ +0x[0-9a-f]+ in \S*(?:nccl\w*|Allgather\w*|AllReduce\w*|all_?reduce\w*|"
        r"all_?gather\w*)",
        C.DISTRIBUTED_FAILURE,
        1.5,
        name="thread-dump-in-collective",
    ),
    rule(
        r"Gloo connectFullMesh failed|ProcessGroupGloo\S* .*(?:failed|error)",
        C.DISTRIBUTED_FAILURE,
        4,
        name="gloo-failed",
    ),
    rule(
        r"\b[A-Z]+_ASSERT\b|\bAssertion [`'\"(]?.{1,200}?[`'\")]? failed|[Aa]ssertion failed",
        C.RUNTIME_CRASH,
        2.5,
        case=True,  # GGML_ASSERT, not a config key named size_assert
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
        r"0xc0000135\b|3221225781\b|STATUS_DLL_NOT_FOUND|\[WinError 126\]",
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
        r"out of (?:GPU|device|video) memory|"
        # Metal's command buffer status and TensorRT-LLM's KV cache check
        r"kIOGPUCommandBufferCallbackErrorOutOfMemory|Insufficient memory for (?:the )?KV cache|"
        # the weights leave the cache nothing; a device allocator (HPU, NPU) refusing
        r"\bleaves? no (?:GPU |device )?memory for the KV cache\b|# GPU blocks: 0\b|"
        r"(?:\b|_)(?:DEVMEM|device memory|HPU memory|NPU memory)\b[^\n]{0,20}?\ballocation "
        r"failed\b|"
        # Metal: more allocated than the GPU's working set holds
        r"\bcurrent allocated size is greater than the recommended max working set size\b",
        C.OOM_GPU,
        5,
        name="allocator-out-of-device-memory",
    ),
    # a builder or allocator stating the bytes it needs against the bytes it has
    rule(
        r"requires \d+ bytes of (?:scratch|workspace|device|GPU) ?(?:space|memory)?, "
        r"but only \d+ (?:is |are )?available",
        C.OOM_GPU,
        4,
        "the engine build needs more GPU memory than is free: smaller max batch/sequence "
        "settings at build time, or more GPUs",
        name="needs-more-bytes-than-available",
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
        r"nvidia-container-cli: (?:requirement|initialization) error|unsatisfied condition: cuda|"
        r"could not select device driver .{0,20}with capabilities: \[\[gpu\]\]|"
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
        r"(?:gcc|nvcc|clang): (?:error|fatal error):|"
        # PyTorch's JIT extension builder (the compile itself failed)
        r"\bError building extension '|"
        # the build tool's and the compiler's own last words, and a kernel program a GPU
        # runtime could not build (OpenCL, SYCL)
        r"\bninja: build stopped: subcommand failed\b|"
        r"\b\d+ errors? detected in the compilation of\b|"
        r"\bfatal error: '?[\w./-]+\.(?:h|hpp|cuh)'?:? (?:file not found|No such file)|"
        r"_BUILD_PROGRAM_FAILURE\b",
        C.MISSING_DEPENDENCY,
        3.5,
        "a kernel compile failed: install the C/CUDA toolchain and headers the JIT "
        "needs (gcc, python3-dev, CUDA toolkit)",
        name="toolchain-failed",
    ),
    # an image or binary built for another CPU architecture (arm64 vs amd64)
    rule(
        r"exec format error|cannot execute binary file|"
        r"requested image's platform \([\w/]+\) does not match the detected host platform",
        C.UNSUPPORTED_HARDWARE,
        4,
        "the image or binary is built for another CPU architecture: pull or build one for "
        "this machine's (e.g. linux/arm64 vs linux/amd64)",
        name="binary-for-another-cpu",
    ),
    # --- CUDA and ROCm error names that say more than "a CUDA error" ---------------
    rule(
        r"Torch not compiled with CUDA enabled|cudaErrorInsufficientDriver|"
        r"cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE|CUDA_ERROR_NOT_INITIALIZED|"
        r"failed to initialize CUDA|HSA_STATUS_ERROR_OUT_OF_RESOURCES.*init|"
        r"Failed to infer device type|Could not initialize Tensile host: No devices found|"
        r"No (?:CUDA|HIP|ROCm|XPU|NPU) GPUs are available|"
        r"No (?:HIP|ROCm|XPU|NPU|SYCL) devices? (?:is |are |was |were )?(?:available|found)|"
        r"NVIDIA-SMI has failed because it couldn't communicate|"
        r"couldn't communicate with the NVIDIA driver",
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
        r"cudaErrorUnsupportedPtxVersion|cudaErrorNotSupported|"
        # rocBLAS without kernels for this GPU's gfx target
        r"TensileLibrary\S* for GPU arch|rocBLAS error: .{0,200}GPU arch",
        C.UNSUPPORTED_HARDWARE,
        4,
        "the kernel's configuration does not fit this GPU: choose another backend "
        "or kernel, or a GPU it was written for",
        name="kernel-does-not-fit-gpu",
    ),
)
