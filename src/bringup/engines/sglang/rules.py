"""SGLang rules, from python/sglang/srt (model_runner, cuda_graph_runner, server_args,
mem_cache/memory_pool, model_loader) and the errors its launch prints.
"""

from __future__ import annotations

from bringup.diagnose.rule import RuleSet, frame_rule, rule
from bringup.verdict import Category as C

_MEM = (
    "lower --mem-fraction-static (e.g. 0.8 -> 0.7), --max-running-requests or "
    "--cuda-graph-max-bs-decode; or spread the model over more GPUs (--tp-size)"
)

RULES = RuleSet(
    engine="sglang",
    module_marker="/sglang/",
    rules=(
        rule(
            r"Not enough memory\. Please try to increase --mem-fraction-static",
            C.OOM_GPU,
            6,
            "weights leave no room for the KV cache: raise --mem-fraction-static if the GPU "
            "has headroom, otherwise more GPUs (--tp-size), a smaller quantization or "
            "--kv-cache-dtype fp8_e4m3",
            name="not-enough-memory-for-kv-cache",
            flags=("--mem-fraction-static",),
        ),
        rule(
            r"is larger than the profiled value -\d+|max_total_num_tokens.*(?:<=? ?0|-\d+)|"
            r"profiled value -\d+",
            C.OOM_GPU,
            5.5,
            "the weights leave no memory for the KV cache: more GPUs (--tp-size), a smaller "
            "quantization, or a higher --mem-fraction-static if memory is free",
        ),
        # model_runner's check that every rank has about the same free memory
        rule(
            r"memory capacity is unbalanced|GPUs may be occupied by other processes",
            C.OOM_GPU,
            5,
            "another process holds memory on some GPUs: free them (nvidia-smi) or choose "
            "idle GPUs (CUDA_VISIBLE_DEVICES)",
            name="gpu-memory-unbalanced",
        ),
        rule(
            r"Capture cuda graph failed",
            C.RUNTIME_CRASH,
            1.5,
            "lower --cuda-graph-max-bs-decode or --mem-fraction-static, or disable CUDA "
            "graphs (--cuda-graph-backend-decode disabled / --disable-cuda-graph)",
        ),
        rule(
            r"Parameter [\w.]+ not found in params_dict|"
            r"not supported for quantization|does not support (?:this )?quantization",
            C.MODEL_INCOMPATIBLE,
            4.5,
            "the checkpoint's tensors or quantization do not match SGLang's model code: use "
            "a supported checkpoint/quantization or a newer SGLang",
        ),
        rule(
            r"(?:backend|kernel) (?:for \w+ )?is only supported on|"
            r"only supported on (?:Hopper|Blackwell|SM ?\d+)|"
            r"requires (?:SM ?\d+|Hopper|Blackwell|sm\d+)|not supported on (?:ROCm|AMD|HIP)",
            C.UNSUPPORTED_HARDWARE,
            4.5,
            "pick an attention/MoE backend that supports this GPU (e.g. flashinfer or triton)",
        ),
        # layers/attention/attn_backend_support.py: a backend's capabilities against the
        # model (MLA, sliding window) and the server arguments (KV dtype, page size, ...)
        rule(
            r"\b\w+ does not support (?:MLA models|sliding window attention)",
            C.MODEL_INCOMPATIBLE,
            5,
            "this attention backend cannot serve the model's attention: choose another "
            "--attention-backend (e.g. triton or flashinfer)",
        ),
        rule(
            r"\b\w+ does not support (?:custom )?kv cache dtype",
            C.INVALID_CONFIG,
            5,
            "the attention backend does not take this KV cache dtype: choose another "
            "--attention-backend, or --kv-cache-dtype auto",
        ),
        rule(
            r"Page size (?:\d+|> 1) is not supported for|\b\w+ does not support (?:CUDA graph|"
            r"speculative decoding|DP attention|chunked prefix cache)",
            C.INVALID_CONFIG,
            5,
            "the attention backend does not support the feature the message names: choose "
            "another --attention-backend or turn the feature off",
        ),
        rule(
            r"--[a-z][\w-]+ (?:is|are) (?:only )?(?:supported|required|needed)|"
            r"(?:must|should) be (?:None|set|specified|enabled|disabled|greater|less|positive)|"
            r"please (?:set|use|specify|add|enable|disable) --[a-z][\w-]+",
            C.INVALID_CONFIG,
            3.5,
        ),
        rule(
            r"Scheduler watchdog timeout|watchdog_timeout",
            C.STARTUP_TIMEOUT_OR_HANG,
            3.5,
            "raise --watchdog-timeout or disable CUDA graphs / custom all-reduce to find the "
            "step that hangs",
        ),
        rule(
            r"Scheduler hit an exception|Received sigquit from a child process|"
            r"Initialization failed\. warmup error|TpModelWorkerClient hit an exception",
            C.RUNTIME_CRASH,
            0.9,
        ),
    ),
    frame_rules=(
        frame_rule(
            r"AssertionError|ValueError",
            r"server_args\.py",
            C.INVALID_CONFIG,
            3.5,
            "fix the server argument the assertion names",
        ),
        frame_rule(r"\w+", r"init_cuda_graphs|cuda_graph_runner\.py:capture", C.RUNTIME_CRASH, 1),
    ),
    remedies={
        C.OOM_GPU: _MEM,
        C.DISTRIBUTED_FAILURE: "try --disable-custom-all-reduce, NCCL_P2P_DISABLE=1, and check "
        "--dist-init-addr / the network interface between nodes",
        C.INVALID_CONFIG: "drop or change the flag the message names",
        C.RUNTIME_CRASH: "an illegal memory access can be a disguised OOM: lower "
        "--mem-fraction-static; otherwise try another --attention-backend or disable CUDA "
        "graphs to isolate the kernel",
        C.UNSUPPORTED_HARDWARE: "pick an attention/MoE/GEMM backend that supports this GPU "
        "(e.g. --attention-backend triton or flashinfer)",
    },
)
