"""The ladder's message grammar: what the words of a message no specific rule knows say.

A message names *what* refused (a GPU, a capture, a parallel size, a config key) and *how*
(not supported, only supports ... got, not divisible, not found). These rules read that
pairing, whichever engine or library wrote the sentence, so that a final exception like
``RuntimeError: GPUs with compute capability less than 7.0 are not supported`` is read as
the GPU refused, not as "a RuntimeError happened":

- hardware nouns (GPU, device, compute capability, CUDA architecture, SM/sm_NN, gfx
  targets) beside a refusal: the code has no kernel for this GPU;
- work CUDA graphs cannot capture (``during CUDA graph capture``, a capture status named):
  the configuration combines graphs with an operation they cannot hold;
- a value refused by naming what is allowed and what was given (``only supports X, got Y``)
  and an assertion whose own source line checks a parallel size: a setting;
- a request or setting beyond a configured maximum; a package "required >= x" or to
  "upgrade", an extension "not compiled for" this platform, a linker or Ninja missing;
- a model file cut short (``failed to read tensor data``, a digest mismatch), a port
  "occupied", death by SIGKILL written in words, a host allocator's failure;
- ranks that cannot connect (c10d, NCCL's network and bootstrap layers, a master or peer
  refusing) and a cluster (Ray) that cannot place its workers: a distributed set-up;
- a JSON library's missing key inside a model's or engine's config: the file is of another
  version than the code reading it;
- the exception's own namespace (``torch.distributed``, ``subprocess``, a missing file)
  as a guess, when no rule knows its message;
- a C++ runtime's abort (an unhandled exception, ``std::terminate``, a Windows abort
  handler): the process died, cause not named.

Weights sit between the named-cause rules (4-5) and the vocabulary rules of
:mod:`bringup.diagnose.signals_launch` (2-2.2): a noun and a verb are a pattern of failure,
not one project's wording, so they decide only when nothing names the cause.
"""

from __future__ import annotations

from bringup.diagnose.rule import REFUSED_ONLY, Rule, rule
from bringup.verdict import Category as C

_HW_NOUN = (
    r"\b(?:GPUs?|devices?|compute capabilit(?:y|ies)|(?:CUDA |GPU )?arch(?:itecture)?s?|"
    r"SM ?\d{2,3}\w?|sm_?\d{2,3}\w?|gfx\d{3,4}\w*|hardware|platform)\b"
)
_REFUSES = (
    r"(?:(?:is|are) not (?:yet )?supported|(?:is|are) unsupported|not (?:yet )?supported|"
    r"(?:is|are) not (?:yet )?available)"
)

# a stretch of the same sentence (a version number's dot does not end it)
_SAME_SENTENCE = r"(?:[^.;]|\.(?=\d)){0,80}?"

RULES: tuple[Rule, ...] = (
    # --- what the GPU can do --------------------------------------------------------
    rule(
        REFUSED_ONLY + r"(?:" + _HW_NOUN + _SAME_SENTENCE + r"\b" + _REFUSES + r"|"
        r"\bcompute capability (?:of |is )?(?:less|lower|below|older|smaller) than\b|"
        r"\b(?:unsupported|not supported)\b[^.;\n]{0,60}?\b(?:pre|below|before|under)[- ]"
        r"(?:SM ?\d{2,3}|sm_?\d{2,3})\b|"
        r"\brequires? (?:an? )?(?:GPUs?|devices?) (?:with|of) (?:compute capability|"
        r"(?:SM|sm_?) ?\d)|"
        r"\bno supported (?:CUDA |GPU |device )?arch\w* (?:were |was )?found\b|"
        r"\bonly (?:supported|available|works?|runs?|supports?) (?:on |for )?(?:\w+ ){0,3}"
        r"(?:GPUs?|Hopper|Ampere|Ada|Blackwell|Volta|Turing|sm_?\d{2,3}|SM ?\d{2,3})\b|"
        r"\b(?:GPUs?|devices?) with compute capability (?:>=?|of at least|at least|above)|"
        r"\b(?:does not|doesn't|do not|don't|cannot|can't) (?:yet )?(?:support|run on) (?:this|the "
        r"current|your|the installed) (?:GPU|device|architecture|hardware|platform)\b|"
        # the hardware a feature needs, named by what it must support
        r"\brequires? (?:\w+ )?(?:hardware|GPUs?|devices?) with (?:native )?\w+ support\b|"
        # a generation named as too old ("cannot be enabled on pre-Hopper")
        r"\b(?:cannot|can't|not supported|unsupported|not available)\b[^.;\n]{0,40}?\bon "
        r"pre-?(?:Hopper|Ampere|Ada|Blackwell|Volta|Turing|SM ?\d{2,3}|sm_?\d{2,3})\b|"
        # the refusal before the noun ("is not supported with device type=cpu")
        r"\bnot supported (?:with|on|for) (?:the |this |your )?(?:device(?: type)?|"
        r"platform|hardware|GPU|NPU|XPU|HPU)\b(?! memory)|"
        # a capability floor stated with the capability found
        r"\bmin(?:imum)?(?:imal)? (?:compute )?capability:? \d+\W{1,6}(?:\W*\w+){0,3}?\W*"
        r"current capability:? \d+|"
        # no kernel compiled for what the run asks on this GPU
        r"\bNo kernel named \w+|"
        r"\bno (?:available|suitable|matching|compatible) (?:\w+ ){0,2}kernels? "
        r"(?:is |are |was |were )?(?:found|available)\b)",
        C.UNSUPPORTED_HARDWARE,
        3,
        "the code has no kernel for this GPU: choose a backend, dtype or quantization "
        "this GPU supports, or a build for its architecture",
        name="message-gpu-refused",
    ),
    # a CPU without the vector instructions the build needs (read even where the engine
    # then says it disables the GPU: that is the consequence)
    rule(
        r"\bCPU does not (?:have|support) (?:the )?(?:minimum |required )?(?:vector|"
        r"instruction|AVX\w*|SSE\w*|FMA|F16C)\b",
        C.UNSUPPORTED_HARDWARE,
        3,
        "the CPU lacks the vector instructions (AVX, AVX2) this build needs: use a build "
        "for this CPU or another host",
        name="cpu-lacks-vector-extensions",
    ),
    # --- what CUDA graphs cannot capture --------------------------------------------
    rule(
        r"\bduring (?:CUDA )?graph capture\b|\bcudaStreamCaptureStatus\w*|"
        r"\bwhile (?:a )?(?:CUDA )?(?:graph|stream) is (?:being )?captur",
        C.INVALID_CONFIG,
        3,
        "an operation cannot run inside a CUDA graph capture with these flags: disable "
        "torch.compile or CUDA graphs for this configuration (--enforce-eager, "
        "--disable-cuda-graph)",
        name="message-not-capturable",
        flags=("--enforce-eager", "--disable-cuda-graph", "--enable-torch-compile"),
    ),
    # --- a value refused by naming what is allowed ----------------------------------
    rule(
        r"\bonly supports? [^.;]{1,80}?,? (?:but )?got\b|"
        r"\bonly supports? [^.;]{1,60}? (?:but|while|whereas) (?:\w+ ){0,3}(?:is|was) "
        r"(?:set|given|used)\b",
        C.INVALID_CONFIG,
        2.4,
        "a setting the code refuses next to what it allows: change the flag to an allowed value",
        name="message-only-supports-got",
    ),
    # the source line of a failed assertion, shown by the traceback, checks a parallel size
    rule(
        r"^assert\b.*(?:%\s*\(?\s*\w*(?:tp|tensor_parallel|pp|pipeline_parallel|world|"
        r"dp|ep)_?\w*\s*\)?\s*==\s*0|\b\w*(?:tp|tensor_parallel|world|pp)_size\b)",
        C.INVALID_CONFIG,
        2.4,
        "the code checks a parallel size against the model's shape: choose a tensor or "
        "pipeline parallel size that divides the model's heads and layers",
        name="assert-on-parallel-size",
        flags=("--tensor-parallel-size", "--tp", "--tp-size", "--pipeline-parallel-size"),
    ),
    # a world size stated against the one the run has (an engine built for 2 ranks run on 1,
    # an MPI size against tp*pp): a setting of this launch
    rule(
        r"\b(?:world|MPI|mpi) ?size\b[^\n]{0,60}?(?:!=|\bdoes(?: not|n't) match\b|\bmismatch|"
        r"\bis expected to (?:be )?equal\b|\bmust (?:be )?equal\b)",
        C.INVALID_CONFIG,
        2.8,
        "the number of ranks started differs from the one the engine or configuration "
        "expects: launch as many ranks as tp*pp (mpirun -n, --world-size), or rebuild for "
        "this size",
        name="world-size-mismatch",
        flags=("--tensor-parallel-size", "--tp", "--tp-size", "--pipeline-parallel-size"),
    ),
    # the source line of a failed assertion checks a key in the model's config: the config
    # was written for another version of the code
    rule(
        r"^assert\b.*\bin (?:self\.)?(?:\w+\.)?(?:\w*_config|config|rope_scaling|"
        r"rope_parameters|quantization_config)\b",
        C.MODEL_INCOMPATIBLE,
        4,
        "the code checks the model's config for a field it does not have (or has in "
        "another form): use an engine version that reads this model's config",
        name="assert-on-model-config-key",
    ),
    # a requested size beyond a configured maximum (not memory: OOM rules read that)
    rule(
        r"\bexceed(?:s|ed)? (?:the )?(?:\w+'s |engine |model |configured |allowed )?"
        r"max(?:imum)?[ _](?:batch|seq|sequence|input|output|new|num|number|length|len|"
        r"tokens?|context|beam|draft|position|prompt)\w*"
        r"(?![^.;]{0,40}?\b(?:memory|KV|cache|blocks)\b)|"
        r"\b(?:prompt|input|request)\b[^.;\n]{0,40}?\bis too long and exceeds (?:the )?"
        r"(?:\w+ )?limit\b",
        C.INVALID_CONFIG,
        2.6,
        "a request or setting asks for more than the configured maximum (sequence length, "
        "batch size, tokens): raise that maximum (or rebuild the engine with it) or ask "
        "for less",
        name="more-than-the-configured-maximum",
    ),
    # --- a package of another version than the code needs ---------------------------
    rule(
        r"\brequires? [\w.-]+ ?(?:>=|>|==|~=)\s*v?\d[\w.]*(?:[^.;]{0,40}?\b(?:but|while|"
        r"got|found|have|installed)\b)|"
        r"\b(?:the )?(?:current(?:ly)? )?installed (?:version of )?[\w.-]+ (?:version )?"
        r"(?:\([\w.+]+\) )?(?:does not|doesn't|is too old|is not)|"
        r"\b(?:please )?(?:upgrade|update|reinstall|downgrade) (?:your )?[\w.-]+ "
        r"(?:to|version|>=|==|matching)\b|"
        r"\bis not compiled (?:for|with)\b|\bwas not compiled with\b|"
        # a built artefact's version against the runtime's ("Engine version 0.9 does not
        # match TensorRT-LLM version 0.10")
        r"\bversion [\w.+-]*\d[\w.+-]* (?:does not|doesn't) match [^.\n]{0,40}?\bversion\b|"
        r"\bNinja is required\b|/ld(?:\.\w+)?: cannot find -l\w+",
        C.MISSING_DEPENDENCY,
        2.8,
        "a package, library or toolchain of another version than the engine needs: "
        "install the version the message names (or the engine release pins)",
        name="message-version-required",
    ),
    # --- a model file cut short or damaged ------------------------------------------
    rule(
        r"\bfailed to read (?:the )?(?:tensor data|tensor info|header|magic|file)\b|"
        r"\bunexpected end of (?:file|stream)\b|\bdigest mismatch\b|"
        r"\bdata is not within the file bounds\b|"
        r"\b(?:file|model|checkpoint|download) (?:is |was |appears (?:to be )?|seems "
        r"(?:to be )?)?(?:truncated|corrupt(?:ed)?|incomplete)\b",
        C.MODEL_LOAD_FAILURE,
        3,
        "the model file is cut short or damaged: download it again and compare its size "
        "or checksum with the source",
        name="model-file-damaged",
    ),
    # a pull or download whose stream ended early: the registry's reply was cut short
    rule(
        r"\bError: (?:EOF|unexpected EOF|unexpected end of JSON input)\b",
        C.MODEL_LOAD_FAILURE,
        3.5,
        "the model download was cut short: pull it again (remove the partial manifest or "
        "blobs first) and check the network or proxy between this host and the registry",
        name="pull-cut-short",
        also=r"\bpull(?:ing)?\b",
    ),
    # --- the model's tensors and the code's parameters do not match -----------------
    rule(
        r"\bno (?:module or parameter|parameter or module|parameter|module) named '[\w.]+' "
        r"in \w+|\btensor names are different from those expected\b|"
        r"\b(?:provided|expected) but not (?:expected|provided) tensors\b",
        C.MODEL_INCOMPATIBLE,
        3.5,
        "the checkpoint's tensors do not match what this code builds for the model (another "
        "quantization or export format): convert the checkpoint with this version's tools, "
        "or use a checkpoint made for this engine",
        name="checkpoint-tensors-mismatch",
    ),
    # --- a model file named and not there -------------------------------------------
    rule(
        r"(?<![\w.-])[\w.-]+\.(?:gguf|safetensors|bin|pth?|engine|plan)'?:? "
        r"no such file or directory\b",
        C.MODEL_LOAD_FAILURE,
        3,
        "the model file the engine opens is not at that path: check the model path or URI "
        "and that the download finished",
        name="model-file-missing",
    ),
    # --- a runner's connection dropped mid-request: the process serving it died ----
    rule(
        r"\bPost \\?\"?https?://(?:127\.0\.0\.1|localhost)[^\s\"\\]*\\?\"?: EOF\b|"
        r"\bServer error: transport error\b|\berror reading from server: EOF\b",
        C.RUNTIME_CRASH,
        2.6,
        "the engine's runner process dropped the connection mid-request, i.e. it crashed: "
        "its own log (or the server log around that time) names why",
        name="runner-connection-dropped",
    ),
    # --- an executable the engine starts is not there -------------------------------
    rule(
        r"\bfork/exec [^:\n]+: no such file or directory\b|"
        r"\b(?:binary|executable) (?:was |is )?not found\b|"
        r"\bunable to locate (?:the )?(?:\w+ ){0,2}runners?\b",
        C.MISSING_DEPENDENCY,
        3,
        "a program the engine starts (its runner or server binary) is missing from this "
        "install: reinstall the engine build for this platform, or point it at the runners",
        name="executable-missing",
    ),
    # --- a request the server refused as malformed or out of bounds -----------------
    rule(
        # (an access log's "POST /x HTTP/1.1" 400 line is a client's mistake, not a failure)
        r"\bBadRequestError\b|\bError 400\b|"
        r"\bFailed to deserialize the JSON body\b",
        C.INVALID_CONFIG,
        2.2,
        "the server refused the request as invalid (HTTP 400): fix the request's fields "
        "or lengths, or launch the server with the mode the request needs",
        name="request-refused-400",
    ),
    # --- a port someone else holds, in other words than "address already in use" ----
    rule(
        r"\bport:? \d+ (?:is )?(?:already )?(?:occupied|taken|in use|used by another)\b|"
        r"\b(?:address|port) (?:is )?already (?:occupied|taken)\b|"
        # a named socket or a named port setting ("Socket '0.0.0.0:5001' already in use",
        # "metrics_port at 1234 is not available ... used by a process already")
        r"\bsocket '?[\w.:\[\]-]*:\d+'? (?:is )?already in use\b|"
        r"\b\w*_?port\b[^.;\n]{0,30}?\bis not available\b|"
        r"\b(?:port|address)\b[^.;\n]{0,40}?\bused by (?:a|another) process\b|"
        r"\bis used by (?:a|another) process already\b",
        C.PORT_IN_USE,
        4.5,
        "another process holds the port: stop it or let bringup pick a free port",
        name="port-occupied",
    ),
    # --- death by SIGKILL written in words (most often the kernel's OOM killer) ------
    rule(
        r"\bexit(?:ed)? (?:on|with|by) signal 9\b|\bsignal 9 \(Killed\)|"
        r"\bexit ?code[=: ]+-?9\b|\bwith signal SIGKILL\b|"
        r"\bkilled by signal:? (?:SIGKILL|Killed|9)\b",
        C.OOM_HOST,
        3.5,
        "a process was killed by SIGKILL, most often the kernel's OOM killer: lower host "
        "memory use (fewer workers, no CPU offload, smaller batches) or add RAM; "
        "dmesg shows the killer's line",
        name="killed-by-sigkill",
    ),
    # host allocations that name the allocator
    rule(
        r"\bggml_aligned_malloc: insufficient memory\b|\bmalloc\(?\)? failed\b|"
        r"\bfailed to allocate \d+ bytes of (?:host|CPU|system) memory\b",
        C.OOM_HOST,
        4,
        "the host ran out of RAM for this allocation: free host memory, lower what the "
        "engine holds on the CPU (offload, mmap, batch), or add RAM",
        name="host-allocation-failed",
    ),
    # the host swap pool for preempted sequences is used up: host memory, by its name
    rule(
        r"\b(?:lack|out) of (?:CPU )?swap space\b|\bswap space (?:is )?(?:exhausted|"
        r"insufficient|too small)\b",
        C.OOM_HOST,
        4,
        "the CPU swap space for preempted sequences ran out: raise --swap-space, or lower "
        "the number of parallel sequences (n, batch)",
        name="host-swap-space-exhausted",
        flags=("--swap-space",),
    ),
    # --- a config file of another version than the code reading it ------------------
    rule(
        r"\[json\.exception\.[\w.]+\] key '\w+' not found",
        C.MODEL_INCOMPATIBLE,
        3,
        "the model's (or built engine's) config lacks a key this runtime reads: the files "
        "were made by another version; rebuild or convert them with this version",
        name="config-key-not-found",
    ),
    # --- ranks that cannot reach each other, a cluster that cannot place them -------
    rule(
        r"\bc10d\b[^\n]{0,160}?\b(?:fail\w*|error|timed? ?out|refused)\b|"
        r"\bclient socket has failed to connect\b|\bsocketStartConnect\b|"
        r"\bno socket interface found\b|\bNET/(?:IB|Socket|Plugin)\b.{0,160}?"
        r"\b(?:error|fail\w*|WARN)\b|\bDuplicate GPU detected\b|"
        r"\bNCCL Error \d+\b|\bunhandled system error\b|"
        r"\bconnect(?:ion)? (?:to|with) (?:the )?(?:master|head node|rank \d+|peer|"
        r"rendezvous)\b.{0,80}?\b(?:fail\w*|refused|timed? ?out)\b|"
        r"\b(?:fail\w*|unable|could not|cannot) (?:to )?connect (?:to|with) (?:the )?"
        r"(?:master|head|rank|peer|rendezvous|coordinator|leader)\b|"
        r"\bcudaIpc\w+ failed|"
        # a remote backend (llama.cpp's RPC servers) that cannot be reached
        r"(?:\b|_)rpc\b[^\n]{0,60}?\b(?:unable|failed) to connect\b|"
        # NVSHMEM's and InfiniBand verbs' set-up between ranks (expert-parallel fabrics)
        r"\b(?:nvshmem\w*|ibv_(?:create|modify|reg|post)\w*|connect EPS|"
        r"ep_connect|transport create connect)\b[^\n]{0,60}?"
        r"\bfail(?:ed|ure)\b|\bcustom[ _]?all-?reduce\b.{0,80}?\b(?:fail\w*|error)\b",
        C.DISTRIBUTED_FAILURE,
        4,
        "the ranks could not reach each other: check the network interface "
        "(NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME), the master address and port, a "
        "firewall, and that every rank started (NCCL_DEBUG=INFO names the failing link)",
        name="ranks-cannot-connect",
    ),
    rule(
        r"\bCurrent node has no GPU available\b|\bNo available node types can fulfill\b|"
        r"\bdoes not allocate any GPUs\b|\bno GPUs? (?:is |are )?(?:available|allocated) "
        r"on the (?:driver|head) node\b|"
        r"\bplacement group\b.{0,100}?\b(?:timed? ?out|cannot|infeasible|not (?:be )?"
        r"(?:created|ready|scheduled))|\bFailed to connect to GCS\b|"
        r"\bGCS (?:server|client)\b.{0,80}?\b(?:fail\w*|timed? ?out|unavailable)\b|"
        r"\bexceeds the (?:total )?number of available GPUs\b|"
        r"\b(?:cannot|can't|could not) (?:be )?(?:schedul\w*|fulfill\w*|satisf\w*)"
        r".{0,60}?\bresources?\b",
        C.DISTRIBUTED_FAILURE,
        3.5,
        "the cluster cannot place the workers: check that every node joined it and has the "
        "GPUs the parallel size asks for (ray status), or lower the parallel size",
        name="cluster-cannot-place-workers",
    ),
    # --- the exception's own namespace, when its message is one no rule knows --------
    # (guesses: below weight 2, so a named cause anywhere in the log outweighs them)
    rule(
        r"^torch\.distributed\.[\w.]*(?:Error|Exception)\b",
        C.DISTRIBUTED_FAILURE,
        1.9,
        "torch.distributed raised it: check that every rank started and can reach the "
        "others (NCCL_DEBUG=INFO names the failing link)",
        name="exception-from-torch-distributed",
        case=True,
    ),
    rule(
        r"^subprocess\.CalledProcessError: Command\b",
        C.MISSING_DEPENDENCY,
        1.8,
        "a tool the engine runs (a compiler, a JIT build) failed: install the toolchain it "
        "calls (gcc, python3-dev, the CUDA toolkit) at the versions the engine needs",
        name="subprocess-failed",
        case=True,
    ),
    rule(
        r"^FileNotFoundError: \[Errno 2\]",
        C.MODEL_LOAD_FAILURE,
        1.6,
        "a file the engine opens is not there: check the model path and that its files "
        "are complete",
        name="file-not-found-error",
        case=True,
    ),
    # --- a kernel's own bounds check at run time -------------------------------------
    rule(
        r"\bout[- ]of[- ]bounds? (?:tensor |memory |index )?access\b",
        C.RUNTIME_CRASH,
        3,
        "a kernel read or wrote outside a tensor: a bug in the engine or kernel for this "
        "input; report it with the request, or try another attention/MoE backend",
        name="out-of-bounds-access",
    ),
    # --- a C++ runtime's abort ------------------------------------------------------
    rule(
        r"Unhandled exception caught in|\bstd::terminate\b|"
        r"\bterminate called without an active exception|"
        r"\b(?:ucrtbase|msvcrt)\.dll!(?:terminate|abort)\b",
        C.RUNTIME_CRASH,
        2.5,
        name="cpp-runtime-abort",
    ),
)
