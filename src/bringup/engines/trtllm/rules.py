"""TensorRT-LLM rules (trtllm-serve, the LLM API and the TensorRT runtime under it), from
tensorrt_llm/runtime, tensorrt_llm/_torch, tensorrt_llm/llmapi and TensorRT's own messages.
"""

from __future__ import annotations

from bringup.diagnose.rule import RuleSet, frame_rule, rule
from bringup.verdict import Category as C

RULES = RuleSet(
    engine="trtllm",
    module_marker="/tensorrt_llm/",
    rules=(
        rule(
            r"Serialization assertion .*(?:Version tag does not match|kSERIALIZATION_VERSION)|"
            r"engine plan file is not compatible with this version of TensorRT|"
            r"Version tag does not match|The engine was built with TensorRT",
            C.MISSING_DEPENDENCY,
            6,
            "the engine was built with another TensorRT version: rebuild it with the "
            "installed TensorRT-LLM, or install the version it was built with",
        ),
        rule(
            r"engine plan file is generated on an incompatible device|"
            r"built (?:for|on) a different (?:GPU|device|SM)",
            C.UNSUPPORTED_HARDWARE,
            6,
            "rebuild the engine on this GPU model",
        ),
        rule(
            r"\[TensorRT-LLM\]\[ERROR\].*(?:out of memory|OutOfMemory|cudaErrorMemoryAllocation)|"
            r"Requested amount of GPU memory|cudaMalloc.*out of memory",
            C.OOM_GPU,
            5.5,
        ),
        rule(
            r"FP8 (?:is|are) (?:only )?(?:not )?supported (?:on|for) (?:sm|SM|Ada|Hopper)|"
            r"not supported on (?:SM|sm)\s?\d+|requires (?:SM|sm)\s?\d+",
            C.UNSUPPORTED_HARDWARE,
            5,
        ),
        rule(
            r"Failed to deserialize cuda engine|Engine (?:file|directory) .* not found|"
            r"engine\.engine|rank\d+\.engine.*(?:No such file|not found)",
            C.MODEL_LOAD_FAILURE,
            3,
        ),
        rule(r"MPI_ABORT was invoked|mpi4py|MPI_Init", C.DISTRIBUTED_FAILURE, 3),
        # a request (or a run) beyond the shapes the engine was built for
        rule(
            r"engine supports \[min, opt, max\]|"
            r"exceeds? (?:the )?(?:engine's )?max_(?:input_len|seq_len|batch_size|num_tokens)|"
            r"(?:is )?(?:larger|greater) than (?:the )?max_(?:input_len|seq_len|batch_size|"
            r"num_tokens|beam_width)",
            C.INVALID_CONFIG,
            4.5,
            "the request exceeds the shapes the engine was built for: shorten it, or rebuild "
            "the engine with larger max_input_len/max_seq_len/max_batch_size",
        ),
        rule(r"\[TensorRT-LLM\]\[ERROR\] Assertion failed", C.RUNTIME_CRASH, 2),
        rule(
            r"should be (?:greater|less|divisible|a multiple)|must be (?:greater|less|"
            r"divisible|a multiple|set)|is not a valid|unexpected keyword argument",
            C.INVALID_CONFIG,
            3,
        ),
    ),
    frame_rules=(
        frame_rule(
            r"ValueError|AssertionError|ValidationError|TypeError",
            r"llm_args\.py|/llmapi/|commands/serve\.py",
            C.INVALID_CONFIG,
            3,
        ),
    ),
    remedies={
        C.OOM_GPU: "lower --kv_cache_free_gpu_memory_fraction, --max_batch_size, "
        "--max_num_tokens or --max_seq_len; or more GPUs (--tp_size)",
        C.INVALID_CONFIG: "fix the option the message names (trtllm-serve flags use "
        "underscores; backend options go in --config YAML)",
    },
)
