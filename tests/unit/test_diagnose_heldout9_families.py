"""Families of failure wording read from the retired heldout9 round, on synthetic lines.

Each family is a kind of message (a kernel image the runtime will not load, a TMA descriptor
on a GPU without TMA, chat templates that do not render or are not found, a host-memory
pool checked against what is free, an engine step that timed out, KV transfers between
disaggregated instances, native stack dumps, a linker or program not on the path, a
container built for a newer driver, a feature another setting rules out, a CUDA-only kernel
without a GPU, a tool call not parsed out of the model's text), checked on lines written for
the test, with near misses that must not be read as the family.
"""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.diagnose.outputtext import output_signals
from bringup.verdict import Category as C


def _rules(log: str, engine: str | None = None) -> tuple[str, float]:
    d = classify(log, engine=engine, learned=False)
    return d.label, d.confidence


@pytest.mark.parametrize(
    ("log", "category"),
    [
        # CUDA: PTX the driver cannot compile (an install); ROCm: no code for this gfx target
        (
            "ggml_cuda_compute_forward: MUL_MAT failed\nCUDA error: device kernel image is "
            "invalid\n  current device: 0, in function ggml_cuda_compute_forward",
            C.MISSING_DEPENDENCY,
        ),
        (
            'Triton Error [CUDA]: device kernel image is invalid while running "flash_fwd"',
            C.MISSING_DEPENDENCY,
        ),
        ("ROCm error: device kernel image is invalid\n  current device: 1", C.UNSUPPORTED_HARDWARE),
        ("RuntimeError: HIP error: hipErrorInvalidImage", C.UNSUPPORTED_HARDWARE),
        (
            "Error: Failed to initialize the TMA descriptor 999\nTMA Desc Addr: 0xffff00001234",
            C.UNSUPPORTED_HARDWARE,
        ),
    ],
)
def test_kernel_images_and_device_units(log: str, category: C) -> None:
    label, conf = _rules(log)
    assert label == category.value
    assert conf >= 0.5


def test_a_device_listing_is_not_generated_text() -> None:
    line = "  Device 1: NVIDIA GeForce RTX 2060, compute capability 7.5, VMM: no, VRAM: 5904 MiB"
    assert output_signals([line]) == []
    assert _rules("ggml_cuda_init: found 2 CUDA devices:\n" + line)[0] != C.GARBAGE_OUTPUT.value


def test_an_aborted_empty_answer_is_not_garbage() -> None:
    aborted = (
        '{"text":"","meta_info":{"finish_reason":{"type":"abort","message":"request failed"}}}'
    )
    plain = '{"text":"","meta_info":{"finish_reason":{"type":"length"}}}'
    assert output_signals([aborted]) == []
    assert output_signals([plain]) != []


@pytest.mark.parametrize(
    ("log", "category"),
    [
        # the model's own template does not parse or render: the model's
        (
            "ERROR 01-02 10:00:00 serving_chat.py:200] jinja2.exceptions.TemplateSyntaxError: "
            "unexpected '}' in template",
            C.MODEL_INCOMPATIBLE,
        ),
        (
            "srv init: failed to apply chat template: tried to use * operator on undefined and int",
            C.MODEL_INCOMPATIBLE,
        ),
        (
            "vllm.entrypoints.chat_utils.ChatTemplateResolutionError: As of transformers v4.44, "
            "default chat template is no longer allowed, so you must provide a chat template if "
            "the tokenizer does not define one.",
            C.MODEL_INCOMPATIBLE,
        ),
        # the template raised on the messages, or the launch named one that is not there
        (
            "Error: Jinja Exception: Conversation roles must alternate user/assistant",
            C.INVALID_CONFIG,
        ),
        (
            "RuntimeError: Chat template templates/mistral.jinja is not a built-in template name",
            C.INVALID_CONFIG,
        ),
        ("ValueError: chat template file ./my_template.jinja not found", C.INVALID_CONFIG),
    ],
)
def test_chat_templates_by_whose_they_are(log: str, category: C) -> None:
    assert _rules(log)[0] == category.value


@pytest.mark.parametrize(
    "line",
    [
        "INFO 01-02 10:00:01 [serving_chat.py:90] Using supplied chat template: "
        "{% for m in messages %}",
        "llama_model_loader: - kv  21: tokenizer.chat_template str = {{ bos_token }}",
        "jinja2 3.1.4 installed",
    ],
)
def test_chat_template_near_misses(line: str) -> None:
    assert _rules(line)[0] not in (C.MODEL_INCOMPATIBLE.value, C.INVALID_CONFIG.value)


@pytest.mark.parametrize(
    ("log", "category"),
    [
        (
            "ValueError: Not enough host memory available. Requesting 64.00 GB but only have "
            "31.50 GB free. Please reduce the size of the host cache.",
            C.OOM_HOST,
        ),
        ("RuntimeError: insufficient system memory to pin the swap space", C.OOM_HOST),
        (
            "ERROR 03-01 12:00:00 async_llm_engine.py:600] Engine iteration timed out. This "
            "should never happen!",
            C.STARTUP_TIMEOUT_OR_HANG,
        ),
        (
            "[2025-01-01 00:00:00 TP0] Prefill transfer failed for request rank=0 with "
            "exception KVTransferError(room=1): connection reset",
            C.DISTRIBUTED_FAILURE,
        ),
        ("Failed to get kvcache from prefill instance, it might be dead", C.DISTRIBUTED_FAILURE),
    ],
)
def test_host_memory_hangs_and_transfers(log: str, category: C) -> None:
    label, conf = _rules(log)
    assert label == category.value
    assert conf >= 0.5


def test_a_step_cancelled_in_the_engine_loop_is_a_hang() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/vllm/engine/async_llm_engine.py", line 800, '
        "in run_engine_loop\n"
        "    done, _ = await asyncio.wait(pending, timeout=60)\n"
        '  File "/usr/lib/python3.11/asyncio/tasks.py", line 400, in wait\n'
        "    return await _wait(fs, timeout, return_when, loop)\n"
        "asyncio.exceptions.CancelledError"
    )
    assert _rules(log, engine="vllm")[0] == C.STARTUP_TIMEOUT_OR_HANG.value


def test_a_cancelled_request_elsewhere_is_no_hang() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/myapp/client.py", line 12, in fetch\n'
        "    await session.get(url)\n"
        "asyncio.exceptions.CancelledError"
    )
    assert _rules(log)[0] != C.STARTUP_TIMEOUT_OR_HANG.value


@pytest.mark.parametrize(
    "log",
    [
        "/usr/lib/libggml-base.so(ggml_print_backtrace+0x1f0) [0x7f0000001000]\n"
        "/usr/lib/libggml-base.so(+0x20000) [0x7f0000002000]",
        "Unhandled exception. System.Runtime.InteropServices.SEHException (0x80004005): "
        "External component has thrown an exception.",
        ">\tggml.dll!ggml_graph_compute(ggml_cgraph * cgraph) Line 4021\tC\n"
        " \tmain.exe!main(int argc, char * * argv) Line 88\tC++",
        "(EngineCore_DP0 pid=100) ERROR 01-01 00:00:00 [dump_input.py:70] Dumping input data "
        "for V1 LLM engine (v0.10.0) with config: model='m'",
    ],
)
def test_native_stack_dumps_are_crashes(log: str) -> None:
    assert _rules(log)[0] == C.RUNTIME_CRASH.value


def test_a_stack_dump_gives_way_to_a_named_cause() -> None:
    log = (
        "CUDA error: out of memory\n"
        "/usr/lib/libggml-base.so(ggml_print_backtrace+0x1f0) [0x7f0000001000]\n"
        "/usr/lib/libggml-base.so(ggml_abort+0x120) [0x7f0000001200]"
    )
    assert _rules(log)[0] == C.OOM_GPU.value


@pytest.mark.parametrize(
    ("log", "category"),
    [
        (
            "(Worker pid=12) collect2: fatal error: cannot find 'ld'\ncompilation terminated.",
            C.MISSING_DEPENDENCY,
        ),
        (
            "ERROR download: text_generation_launcher: text-generation-server not found in PATH\n"
            "Error: DownloadError",
            C.MISSING_DEPENDENCY,
        ),
        ('exec: "nvidia-container-cli": executable file not found in $PATH', C.MISSING_DEPENDENCY),
        (
            "ERROR: This container was built for NVIDIA Driver Release 550.54 or later, but\n"
            "       version 525.60.13 was detected and compatibility mode is UNAVAILABLE.",
            C.MISSING_DEPENDENCY,
        ),
        (
            "[TensorRT-LLM][ERROR] Encountered an error in forward function: Input tensor "
            "'host_runtime_perf_knobs' not found; expected shape: (16)",
            C.MISSING_DEPENDENCY,
        ),
        (
            "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
            "  what():  [TensorRT-LLM][ERROR] Assertion failed: paged KV cache cannot be enabled "
            "because the attention plugin is disabled.",
            C.INVALID_CONFIG,
        ),
        (
            '{"error":"Request failed during generation: Server error: qkv must be a CUDA tensor"}',
            C.UNSUPPORTED_HARDWARE,
        ),
        (
            "Error: no Modelfile or safetensors files found",
            C.MODEL_LOAD_FAILURE,
        ),
    ],
)
def test_installs_settings_and_files(log: str, category: C) -> None:
    assert _rules(log)[0] == category.value


@pytest.mark.parametrize(
    ("log", "category"),
    [
        # the GPU generation named beside the refusal stays the hardware's
        (
            "[TensorRT-LLM][ERROR] Assertion failed: FP8 FMHA cannot be enabled except on Ada or "
            "Hopper Arch.",
            C.UNSUPPORTED_HARDWARE,
        ),
        # a linker that cannot find a library is a library of another version, not the linker
        ("/usr/bin/ld: cannot find -lcuda", C.MISSING_DEPENDENCY),
    ],
)
def test_installs_settings_near_misses(log: str, category: C) -> None:
    assert _rules(log)[0] == category.value


def test_tool_call_not_parsed_is_the_models_text() -> None:
    line = (
        'time=2026-01-01T00:00:00Z level=WARN source=parser.go:300 msg="tool call parsing '
        'failed" error="invalid character \'#\' looking for beginning of value"'
    )
    assert _rules(line)[0] == C.GARBAGE_OUTPUT.value
    # the launch's parser name refused is a setting, not the text
    refused = "KeyError: 'invalid tool call parser: foo (chose from { hermes,llama3_json })'"
    assert _rules(refused)[0] != C.GARBAGE_OUTPUT.value


@pytest.mark.parametrize(
    ("log", "category"),
    [
        ("when I run the build script it gets killed after a minute", C.OOM_HOST),
        ("with greedy sampling I meet the repeated answer until max_tokens", C.GARBAGE_OUTPUT),
    ],
)
def test_reporter_words_are_guesses(log: str, category: C) -> None:
    label, conf = _rules(log)
    assert label == category.value
    assert conf < 0.5
