"""Engine-independent rules: CUDA/HIP runtime, NCCL/gloo, the OOM killer, Python and argparse.

These are the texts CUDA, PyTorch, NCCL, the Linux kernel, the dynamic loader, argparse and the
Hugging Face hub print, whichever engine sits on top of them.
"""

from __future__ import annotations

from bringup.diagnose.rule import REFUSED_ONLY, RuleSet, frame_rule, not_advised, rule
from bringup.verdict import Category as C

_KILL_PORT = "another process holds the port: stop it or let bringup pick a free port"
_INSTALL = "install the missing or matching package version (see the import that failed)"

RULES = RuleSet(
    engine="generic",
    rules=(
        # --- GPU memory -------------------------------------------------------------------
        rule(
            r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: out of memory",
            C.OOM_GPU,
            5,
        ),
        rule(
            r"cudaMalloc failed: out of memory|cudaErrorMemoryAllocation|"
            r"hipErrorOutOfMemory|ErrorOutOfDeviceMemory|CUBLAS_STATUS_ALLOC_FAILED",
            C.OOM_GPU,
            5,
        ),
        rule(
            r"(?:unable|failed) to allocate (?:CUDA|ROCm|Vulkan|SYCL|MTL|Metal|CANN)\d* buffer",
            C.OOM_GPU,
            4.5,
        ),
        # (not where a line gives advice for the case: "if you are running out of memory,
        # consider ...", "to avoid out of memory, ...")
        rule(
            not_advised(r"\bout of memory\b") + r"\bout of memory\b",
            C.OOM_GPU,
            3,
            name="\\bout of memory\\b",  # the id it has always had
        ),
        rule(
            r"DefaultCPUAllocator: (?:not enough memory|can't allocate memory)|"
            r"Unable to allocate [\d.]+ [KMGT]i?B for an array",
            C.OOM_HOST,
            5,
        ),
        rule(r"Requested amount of GPU memory .* could not be allocated", C.OOM_GPU, 4.5),
        rule(
            r"(?:failed|unable) to allocate (?:GPU |device |CUDA )?memory for (?:the )?"
            r"kv[ _]?cache",
            C.OOM_GPU,
            4.5,
        ),
        # --- host memory ------------------------------------------------------------------
        rule(
            r"Out of memory: Kill(?:ed)? process|oom-kill(?:er)?|OOMKilled|invoked oom-killer",
            C.OOM_HOST,
            5.5,
        ),
        rule(
            r"^Killed$|signal: killed|\bSIGKILL\b|killed by signal 9|exit(?:ed)? (?:with )?"
            r"(?:code|status) 137\b|signaled to shutdown with signal 9\b|"
            r"^(?:zsh|bash|sh): killed\b|^Killed: 9$|"
            # the shell's report of a job it ran: "line 1:  123 Killed   python3 -m ..."
            r"(?:^|: )(?:line \d+: +)?\d+ Killed {2,}\S|^\[\d+\][+-]? +Killed +\S|"
            # a parent's report of a child ended by SIGKILL
            r"exit ?code[=: ]+-9\b|exit(?:ed)? with (?:code|status) -9\b",
            C.OOM_HOST,
            3.5,
        ),
        rule(
            r"killed due to (?:memory pressure|the node running low on memory)|"
            r"ray\.exceptions\.OutOfMemoryError",
            C.OOM_HOST,
            5.5,
        ),
        rule(
            r"\bMemoryError\b|std::bad_alloc|Cannot allocate memory|ENOMEM\b|"
            r"(?:unable|failed) to allocate CPU buffer|model requires more system memory|"
            # a pool in host RAM (a hierarchical KV cache, a swap space) checked against
            # what is free
            r"\b(?:not enough|insufficient) (?:free )?(?:host|system|CPU) (?:memory|RAM)\b|"
            r"\bhost memory (?:is )?(?:insufficient|exhausted|not enough)\b",
            C.OOM_HOST,
            4,
        ),
        # --- hardware ---------------------------------------------------------------------
        rule(
            r"no kernel image is available\b|"
            r"cudaErrorNoKernelImageForDevice|hipErrorNoBinaryForGpu",
            C.UNSUPPORTED_HARDWARE,
            5.5,
            "the kernels were not built for this GPU's architecture: use a build for its "
            "compute capability, or a backend known to support the GPU",
        ),
        rule(
            r"sm_\d+ is not compatible with the current PyTorch installation|"
            r"CUDA capability sm_\d+ is not (?:compatible|supported)",
            C.UNSUPPORTED_HARDWARE,
            5,
            "install a PyTorch/engine build compiled for this GPU",
        ),
        rule(
            r"invalid device function|Unsupported GPU architecture|"
            r"(?:requires|needs) (?:a )?(?:GPU with )?compute capability|"
            r"Minimum capability: \d+\.? *Current capability|"
            r"only supported on (?:\w+ )?(?:Hopper|Blackwell|Ampere|SM ?\d+|GPUs? with)|"
            r"(?:is )?not supported on (?:this|your|the current) (?:GPU|device|platform|hardware)|"
            r"only supported (?:on|for) GPUs? with compute capability|"
            r"only supports (?:Ampere|Hopper|Blackwell|sm ?\d+)|requires? (?:an? )?sm_?\d+a?\b|"
            r"Unsupported SM version|not supported on CUDA arch|\bCUDA arch [<>]=? ?\d+|"
            r"(?:current )?platform \w+ (?:does not|doesn't) support|"
            r"\bfor (?:Volta|Turing|Pascal|Maxwell|Kepler)(?: (?:and|or) \w+)? GPUs",
            C.UNSUPPORTED_HARDWARE,
            4,
            "choose a backend known to support this GPU (or the one the message names)",
        ),
        rule(
            r"Failed to find C compiler|CUDA_HOME environment variable is not set|"
            # a build that cannot find the CUDA toolkit (CMake's words)
            r"No CMAKE_CUDA_COMPILER could be found|Could not find nvcc|"
            r"Could NOT find CUDAToolkit|"
            r"links to:\s*CUDA::\w+\s+but the target was not found|"
            r"^\s*but the target was not found|"
            r"No CUDA runtime is found|nvcc(?: was)? not found|"
            r"no CUDA-capable device is detected|CUDA driver initialization failed|"
            r"Found no NVIDIA driver|NVIDIA driver on your system is too old|"
            r"CUDA driver version is insufficient",
            C.MISSING_DEPENDENCY,
            4,
            "install a GPU driver that matches the CUDA runtime of the engine build",
        ),
        # --- CUDA faults ------------------------------------------------------------------
        rule(
            r"operation not permitted when stream is capturing|cudaErrorStreamCapture\w+",
            C.INVALID_CONFIG,
            4,
            "an operation cannot be captured in a CUDA graph with these flags: disable "
            "torch.compile or CUDA graphs for this configuration",
        ),
        rule(
            r"illegal memory access|misaligned address|unspecified launch failure|"
            r"device-side assert(?:ion)? triggered|illegal instruction was encountered|"
            r"CUBLAS_STATUS_EXECUTION_FAILED|CUDA error: an illegal|"
            # the same fault as the GPU's kernel driver logs it (dmesg): a kernel that read
            # or wrote outside its memory
            r"\bMemory access fault by GPU node\b|\bamdgpu\b.{0,80}\bpage fault\b",
            C.RUNTIME_CRASH,
            4,
        ),
        # sampling met logits that overflowed (NaN/inf): the numbers the kernels produced
        rule(
            r"\bprobability tensor contains either `?inf`?, `?nan`? or element < 0\b",
            C.RUNTIME_CRASH,
            3.5,
            "the logits overflowed to NaN/inf before sampling (a float16 overflow, a "
            "quantized kernel's fault): try --dtype bfloat16 or float32, another kernel or "
            "quantization, or another parallel size",
        ),
        rule(
            r"Segmentation fault|SIGSEGV|core dumped|Fatal Python error|"
            r"terminate called after throwing|\bAborted\b|Bus error|Floating point exception|"
            r"\bSIGFPE\b|Trace/breakpoint trap",
            C.RUNTIME_CRASH,
            2.5,
        ),
        rule(
            r"CUDA error\b|CUDA kernel errors might be asynchronously reported|hipError\w+",
            C.RUNTIME_CRASH,
            1.5,
        ),
        # --- distributed ------------------------------------------------------------------
        rule(
            r"NCCL WARN (?:Cuda failure|Call to \w+ failed|.*(?:[Tt]imeout|error|Error))|"
            r"NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|"
            r"ncclInvalidUsage|ncclRemoteError|ncclInvalidArgument|NCCL communicator|"
            r"\bnccl(?:CommInit|CommSplit|GroupEnd|AllReduce|AllGather|ReduceScatter|Broadcast|"
            r"Send|Recv)\w* failed\b|failed to init(?:ialize)? NCCL",
            C.DISTRIBUTED_FAILURE,
            4.5,
            "check the GPU interconnect: NCCL_P2P_DISABLE=1 / NCCL_IB_DISABLE=1, "
            "disable custom all-reduce, run with NCCL_DEBUG=INFO",
        ),
        # NCCL also warns about optional plugins it did not find; alone that decides little
        rule(r"NCCL WARN", C.DISTRIBUTED_FAILURE, 2),
        rule(
            r"gloo/transport|Connection closed by peer|Connection reset by peer|"
            r"DistStoreError|DistNetworkError|DistBackendError|RendezvousTimeoutError|"
            r"RendezvousConnectionError|client socket has timed out|"
            r"Watchdog caught collective operation timeout|ProcessGroupNCCL.*(?:timeout|error)|"
            r"failure detected by watchdog at work sequence|"
            r"peer access is not supported|Socket Timeout|"
            r"TCPStore.*(?:timed out|timeout|failed)|Timed out .* waiting for (?:clients|workers)",
            C.DISTRIBUTED_FAILURE,
            4,
            "check the network between ranks (interface, IPv4 vs IPv6, firewall) and that all "
            "ranks started; set GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME",
        ),
        rule(r"RayActorError|The actor died unexpectedly|ActorDiedError", C.DISTRIBUTED_FAILURE, 2),
        # --- ports ------------------------------------------------------------------------
        rule(
            r"Address already in use|EADDRINUSE|\[Errno 98\]|\[WinError 10048\]|"
            r"address already in use|port \d+ is (?:already )?in use|"
            r"Port \d+ is not available",
            C.PORT_IN_USE,
            5.5,
            _KILL_PORT,
        ),
        # --- Python packages / shared libraries -------------------------------------------
        rule(
            r"ModuleNotFoundError|No module named|ImportError|cannot import name",
            C.MISSING_DEPENDENCY,
            4,
            _INSTALL,
        ),
        rule(
            # NCCL probing for its optional network plugin is not a missing dependency
            r"^(?!.*(?:NET/Plugin|libnccl-net|NCCL INFO))(?:.*cannot open shared object file)|"
            r"error while loading shared libraries|"
            r"undefined symbol:|\.so[.\d]*: undefined symbol\b|GLIBC(?:XX)?_[\d.]+' not found|"
            r"DLL load failed|"
            r"OSError: .*\.so[.\d]*: cannot|Library not loaded",
            C.MISSING_DEPENDENCY,
            4.5,
            "a shared library is missing or from another version: reinstall the engine build "
            "that matches the CUDA/PyTorch in use",
        ),
        rule(
            # (not where the engine carries on without it: "falling back ... for the best
            # performance, please install X" is advice, not the failure; nor a deprecation
            # notice: "a deprecated `x` package ... please install y instead")
            r"^(?!(?i:.*\b(?:fall(?:s|ing)? back|for (?:the )?best performance|deprecated)\b))"
            r".*?"
            r"(?:(?:please |pip )install\b|is not installed|requires? (?:the )?[\w.-]+ "
            r"(?:package|library) (?:to be installed|version)|"
            r"version (?:mismatch|conflict)|incompatible version|"
            # pip's resolver: "x 0.6 requires torch==2.4.0, but you have torch 2.5.1 ..."
            r"requires [\w.-]+ ?[<>=!~]=?[^,]{0,40}, but you have [\w.-]+ |"
            r"the provided PTX was compiled with an unsupported toolchain)",
            C.MISSING_DEPENDENCY,
            3,
            _INSTALL,
        ),
        # --- argparse ---------------------------------------------------------------------
        rule(
            r"error: unrecognized arguments?:|error: argument [-\w/]+: invalid|"
            r"error: ambiguous option|error: the following arguments are required|"
            r"error: argument [-\w/]+: expected|error: argument [-\w/]+: not allowed with|"
            r"\busage: \S+ .*\[-h\]",
            C.INVALID_CONFIG,
            5,
            "fix the command line the parser rejected (a flag this engine version does not "
            "know, or a value outside its choices)",
        ),
        # --- configuration conflicts named in messages ------------------------------------
        rule(
            # (a setting against another setting; against a device type it is the hardware)
            r"(?:is|are) not supported (?:with|when|together with|in combination)"
            r"(?! (?:the )?(?:device|platform|hardware)\b)|"
            r"cannot be used (?:with|together)|mutually exclusive|is incompatible with|"
            r"must be divisible by|is not divisible by|should be divisible by|must divide\b|"
            r"(?:requires|needs|only works with|is only supported (?:with|when)) --[a-z][\w-]+|"
            r"(?:Unknown|Invalid|Unsupported) (?:attention |MoE |moe )?backend|"
            r"is smaller than max_model_len",
            C.INVALID_CONFIG,
            3.5,
        ),
        # --- model files / hub ------------------------------------------------------------
        rule(
            r"gated repo|401 Client Error|403 Client Error|Repository Not Found|"
            r"RepositoryNotFoundError|GatedRepoError|RevisionNotFoundError|"
            r"is not a local folder and is not a valid model identifier|"
            r"does not appear to have (?:a )?files? named|EntryNotFoundError|"
            r"Can't load (?:the )?(?:tokenizer|configuration|config) for|"
            r"We couldn't connect to 'https://huggingface\.co'|LocalEntryNotFoundError|"
            r"HFValidationError|Unrecognized model in .*Should have a `model_type` key|"
            r"Incorrect path_or_model_id|You must be authenticated|"
            r"Access to model [\w./-]+ is restricted|"
            r"MetadataIncompleteBuffer",
            C.MODEL_LOAD_FAILURE,
            5,
            "check the model path/name and access (accept the licence, log in to the hub, "
            "or point at a local copy)",
        ),
        rule(
            r"SafetensorError|HeaderTooLarge|incomplete metadata|file (?:is )?truncated|"
            r"unexpected(?:ly reached)? end of file|invalid load key",
            C.MODEL_LOAD_FAILURE,
            4.5,
            "the model file is corrupt or incomplete: download again",
        ),
        rule(
            r"No such file or directory.*(?:model|\.gguf|\.safetensors|config\.json|\.engine\b|"
            r"\.bin\b|\.pth?\b|tokenizer|checkpoint|weights)|"
            r"(?:model|checkpoint) (?:file|path|directory) .*(?:not found|does not exist)",
            C.MODEL_LOAD_FAILURE,
            3.5,
        ),
        # --- model support ----------------------------------------------------------------
        rule(
            REFUSED_ONLY + r"(?:size mismatch for|"
            r"does not recognize (?:this|the `?[\w./-]+`?) (?:model )?architecture|"
            r"model type `?[\w-]+`? (?:is )?not (?:supported|recognized)|"
            r"Unsupported (?:model )?architecture|is not supported for (?:this|the) model|"
            # "... model is not supported with pipeline parallelism" refuses a combination
            # of settings (read below as a configuration), not the model
            r"(?:model|architecture) (?:is )?not (?:yet )?supported"
            r"(?! (?:with|when|together|in combination|alongside)\b)|"
            r"requires [\w_]*(?:head_dim|num_heads|head_size|hidden_size)\w* ?[=!<>]=)",
            C.MODEL_INCOMPATIBLE,
            4,
            name="size mismatch for|does not recognize thi",  # the id it has always had
        ),
        # --- attention kernels and the model's shape ---------------------------------------
        # flashinfer's MLA shape checks and head-dim dispatch, vLLM's backends and paged
        # attention, flash-attn: this kernel cannot take the model's head dimension, while
        # another attention backend can.
        rule(
            r"Expected (?:qk_nope_head_dim|qk_rope_head_dim|v_head_dim|kv_lora_rank|"
            r"head_dim\w*) == \d+, got \d+|Expected head dim \d+ for query|"
            r"Unsupported head[_ ]?(?:dim|size)\w*(?::| ?=| \d)|"
            r"Head size \d+ is not supported|"
            r"head[_ ]?(?:dim|size)\w*(?: ?[=:]? ?\d+)? (?:is )?not supported|"
            r"only supports? head[_ ]?(?:dim|size)|"
            r"(?:not supported|unsupported) (?:for|with) (?:this )?head[_ ]?(?:dim|size)|"
            r"Cannot use \S+ backend for head size",
            C.MODEL_INCOMPATIBLE,
            5,
            "the attention kernel has no variant for this model's head dimension: choose "
            "another attention backend (--attention-backend, e.g. triton)",
        ),
        # --- output ----------------------------------------------------------------------
        rule(
            r"!{8,}|(?:<unk>\s*){4,}|(?:<pad>\s*){4,}|\ufffd{3,}",
            C.GARBAGE_OUTPUT,
            3,
            "a conservative configuration (unquantized KV cache, another attention backend "
            "or the CPU backend) usually gives correct output; compare against it",
        ),
        rule(
            r"\b(?:gibberish|garbled|garbage (?:output|text|tokens)|nonsense output|"
            r"incoherent|repeat(?:s|ing)? (?:the same|itself|\"))",
            C.GARBAGE_OUTPUT,
            2,
        ),
        rule(
            # (a traceback's source line "output = self.forward(x)" assigns, it answers nothing)
            r"^(?:Output|Generated text|Response|Completion)\s*(?::|=(?!\s*(?:await\s+)?"
            r"[\w.\[\]]+\())\s*\S|^assistant$",
            C.GARBAGE_OUTPUT,
            1.2,
        ),
        # --- hang signals -----------------------------------------------------------------
        rule(
            r"watchdog timeout|Health check failed\. Server couldn't get a response|"
            r"timed out waiting for (?:the )?(?:engine|server|model|workers?)",
            C.STARTUP_TIMEOUT_OR_HANG,
            3,
        ),
        # --- weak catch-alls: a failure happened, the cause is elsewhere -------------------
        rule(
            # (an exception's module path counts: "triton.compiler.errors.CompilationError: ")
            r"Traceback \(most recent call last\)|^(?:\w+\.)*\w*(?:Error|Exception): ",
            C.RUNTIME_CRASH,
            0.8,
            name=r"Traceback \(most recent call last\)|^\w*",  # the id it has always had
        ),
        rule(r"(?:^|: )error: |\bERROR\b|\bFATAL\b|\bpanic: ", C.RUNTIME_CRASH, 0.6),
    ),
    frame_rules=(
        # the checkpoint's tensors do not match the model code that loads them
        frame_rule(
            r"KeyError|AssertionError|ValueError|RuntimeError|IndexError",
            r"load_weights|weight_loader|_load_weights|load_state_dict",
            C.MODEL_INCOMPATIBLE,
            3,
            "the checkpoint layout does not match this engine's model code: use a "
            "checkpoint/quantization the engine supports, or a newer engine",
        ),
        frame_rule(
            r"AssertionError|ValueError|NotImplementedError|TypeError",
            r"server_args|arg_utils|/config/|config\.py|llm_args|_verify_\w+|__post_init__",
            C.INVALID_CONFIG,
            2.5,
        ),
        frame_rule(
            r"\w+",
            r"init_distributed_environment|init_process_group|"
            r"initialize_model_parallel|_new_process_group|all_reduce|init_custom_ar",
            C.DISTRIBUTED_FAILURE,
            2,
        ),
        frame_rule(r"NotImplementedError", r"/models?/\w+\.py", C.MODEL_INCOMPATIBLE, 2.5),
    ),
)
