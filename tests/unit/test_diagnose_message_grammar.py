"""The message grammar of the ladder (which noun refused with which verb) and the weakest
evidence of a hang (a log that stops on ordinary progress lines): each class decides on
wordings no rule quotes, and none outweighs a line that names its cause."""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.diagnose.diagnosis import GUESS_BELOW
from bringup.diagnose.logtext import content, level_of
from bringup.verdict import Category


@pytest.mark.parametrize(
    ("log", "category", "rule"),
    [
        (
            "RuntimeError: Devices of compute capability below 8.0 are not supported by "
            "this kernel.",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        (
            "ERROR 02-01 10:00:00 [core.py:12] RuntimeError: No supported CUDA "
            "architectures were found for major versions [12].",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        (
            "ValueError: The fused MoE kernel only runs on Hopper GPUs.",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        (
            "RuntimeError: Cannot call at::cuda::getCurrentCUDABlasHandle during CUDA graph "
            "capture.",
            Category.INVALID_CONFIG,
            "message-not-capturable",
        ),
        (
            "AssertionError: MLA backend only supports block size 64, got 16",
            Category.INVALID_CONFIG,
            "message-only-supports-got",
        ),
        (
            '  File "/x/models/foo.py", line 9, in __init__\n'
            "    assert self.num_heads % tp_size == 0\n"
            "AssertionError",
            Category.INVALID_CONFIG,
            "assert-on-parallel-size",
        ),
        (
            "E0101 model.cc:1] failed to load: [json.exception.out_of_range.403] key "
            "'hidden_size' not found",
            Category.MODEL_INCOMPATIBLE,
            "config-key-not-found",
        ),
        (
            "Unhandled exception caught in c10/util/AbortHandler.h\n"
            "00007FFE ucrtbase.dll!terminate [<unknown file> @ <unknown line number>]",
            Category.RUNTIME_CRASH,
            "cpp-runtime-abort",
        ),
        (
            "[W socket.cpp:601] [c10d] The client socket has failed to connect to "
            "[node-1]:29500 (errno: 113 - No route to host).",
            Category.DISTRIBUTED_FAILURE,
            "ranks-cannot-connect",
        ),
        (
            "node-2:123:456 [0] NET/IB : Got async event : port error",
            Category.DISTRIBUTED_FAILURE,
            "ranks-cannot-connect",
        ),
        (
            "ValueError: Current node has no GPU available. current_node_resource={'CPU': 8}",
            Category.DISTRIBUTED_FAILURE,
            "cluster-cannot-place-workers",
        ),
        (
            "[TensorRT-LLM][ERROR] Assertion failed: maxBatchSize 512 exceeds the engine's "
            "maximum batch size 256",
            Category.INVALID_CONFIG,
            "more-than-the-configured-maximum",
        ),
        (
            "RuntimeError: FlashInfer requires torch>=2.5 but found 2.4.0",
            Category.MISSING_DEPENDENCY,
            "message-version-required",
        ),
        (
            "RuntimeError: sgl_kernel is not compiled for this platform",
            Category.MISSING_DEPENDENCY,
            "message-version-required",
        ),
        (
            "gguf_init_from_file_impl: failed to read tensor data",
            Category.MODEL_LOAD_FAILURE,
            "model-file-damaged",
        ),
        (
            "RuntimeError: Port 30000 is occupied by another process",
            Category.PORT_IN_USE,
            "port-occupied",
        ),
        (
            "mpirun noticed that process rank 3 with PID 0 on node n1 exited on signal 9 (Killed).",
            Category.OOM_HOST,
            "killed-by-sigkill",
        ),
        (
            "ggml_aligned_malloc: insufficient memory (attempted to allocate 2048.00 MB)",
            Category.OOM_HOST,
            "host-allocation-failed",
        ),
        (
            "custom allreduce: cudaIpcOpenMemHandle failed: invalid argument",
            Category.DISTRIBUTED_FAILURE,
            "ranks-cannot-connect",
        ),
    ],
)
def test_the_noun_and_verb_of_a_message_decide(log: str, category: Category, rule: str) -> None:
    d = classify(log)
    assert d.category is category
    assert d.rule == f"ladder:{rule}"
    assert d.remedy


@pytest.mark.parametrize(
    ("log", "category", "rule"),
    [
        (
            "torch.distributed.elastic.rendezvous.api.RendezvousClosedError",
            Category.DISTRIBUTED_FAILURE,
            "exception-from-torch-distributed",
        ),
        (
            "subprocess.CalledProcessError: Command '['which', 'c++']' returned non-zero "
            "exit status 1.",
            Category.MISSING_DEPENDENCY,
            "subprocess-failed",
        ),
        (
            "FileNotFoundError: [Errno 2] No such file: '/data/run/x.bin'",
            Category.MODEL_LOAD_FAILURE,
            "file-not-found-error",
        ),
    ],
)
def test_an_exception_namespace_alone_is_a_guess(log: str, category: Category, rule: str) -> None:
    d = classify(log, learned=False)
    assert (d.category, d.rule) == (category, f"ladder:{rule}")
    assert d.confidence < GUESS_BELOW


@pytest.mark.parametrize(
    "log",
    [
        "ValueError: The model's max seq len (131072) exceeds the maximum number of tokens "
        "that can be stored in KV cache (40000).",
        "WARNING Found ulimit of 20000 and failed to automatically increase with error "
        "current limit exceeds maximum limit.",
    ],
)
def test_a_maximum_of_memory_or_a_limit_is_not_a_setting(log: str) -> None:
    assert classify(log).rule != "ladder:more-than-the-configured-maximum"


@pytest.mark.parametrize(
    ("log", "category"),
    [
        ("ollama run llama3.1:405b\nit just remains with the rotating cursor.", "hang"),
        ("when deployed with vllm the output is all `!!!!` for every prompt", "garbage"),
    ],
)
def test_a_reporters_words_are_a_guess(log: str, category: str) -> None:
    d = classify(log, learned=False)
    want = {"hang": Category.STARTUP_TIMEOUT_OR_HANG, "garbage": Category.GARBAGE_OUTPUT}
    assert d.category is want[category]
    assert d.confidence < GUESS_BELOW


def test_a_named_cause_outweighs_the_grammar() -> None:
    # the GPU-refusal grammar and a CUDA OOM on one log: the OOM names the cause
    log = (
        "WARNING this GPU is not supported by the fast path, using the slow one\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    )
    assert classify(log).category is Category.OOM_GPU


def test_a_worked_around_refusal_is_not_the_gpu_refused() -> None:
    log = "INFO FlashInfer is not supported on this GPU; falling back to the Triton backend"
    assert classify(log).rule != "ladder:message-gpu-refused"


def test_a_log_that_stops_on_progress_lines_is_a_guessed_hang() -> None:
    log = "\n".join(
        [
            "INFO 04-25 07:45:43 [__init__.py:239] Automatically detected platform cuda.",
            "INFO 04-25 07:45:50 [config.py:600] Defaulting to 'generate'.",
            "INFO 04-25 07:45:51 [config.py:1780] Chunked prefill is enabled.",
            "INFO 04-25 07:45:55 [__init__.py:239] Automatically detected platform cuda.",
        ]
    )
    d = classify(log, learned=False)
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert d.rule == "hang:log-stops-on-progress-lines"
    assert d.confidence < GUESS_BELOW
    assert "no error and no exit" in d.evidence[0]
    # the learned fallback may answer where no rule is sure, but what it says is a guess too
    assert classify(log).confidence < GUESS_BELOW


def test_progress_lines_that_name_a_failure_are_no_hang() -> None:
    log = "\n".join(
        [
            "INFO 04-25 07:45:43 [a.py:1] starting",
            "INFO 04-25 07:45:50 [a.py:2] loading",
            "INFO 04-25 07:45:51 [a.py:3] worker exited, shutting down",
        ]
    )
    assert classify(log).rule != "hang:log-stops-on-progress-lines"


def test_a_python_warning_after_a_phase_does_not_hide_where_it_stopped() -> None:
    log = "\n".join(
        [
            "[2025-12-22 15:01:54 TP7] Init torch distributed begin.",
            "/src/utils.py:498: UserWarning: Using a slow tokenizer.",
            "  warnings.warn(",
        ]
    )
    d = classify(log)
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert d.stage_reached == "connecting to peers (distributed init)"


@pytest.mark.parametrize(
    ("line", "level", "message"),
    [
        ("[11/20/2025-23:56:51] [TRT-LLM] [I] Set PluginConfig.x to 1.", "info", "["),
        ("[TensorRT-LLM][ERROR] Assertion failed: beam width", "error", "[TensorRT-LLM]"),
        ("[03/10/2025-08:30:05] [TRT] [E] Error Code 1: Cuda Runtime", "error", "["),
        ("[TRT-LLM] [W] Logger level changed", "warning", "[TRT-LLM]"),
    ],
)
def test_tensorrt_llm_bracketed_levels_are_read(line: str, level: str, message: str) -> None:
    assert level_of(line) == level
    assert content(line).startswith(message)
