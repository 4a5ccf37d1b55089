"""fatal_line: fires on the lines engines print before they die, not on healthy start-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.diagnose import classify, fatal_line
from bringup.verdict import Category

FIXTURES = Path(__file__).parent / "fixtures"

BENIGN_LLAMACPP = [
    "build: 6512 (a1b2c3d4) with cc (GCC) 13.2.0 for x86_64-linux-gnu",
    "system_info: n_threads = 2 (n_threads_batch = 2) / 2 | CPU : SSE3 = 1 | AVX2 = 1 |",
    "main: HTTP server is listening, hostname: 127.0.0.1, port: 8080, http threads: 1",
    "srv    load_model: loading model '/models/gemma-3-270m-q4_k_m.gguf'",
    "llama_model_loader: - kv  30:               general.quantization_version u32              = 2",
    "load: special tokens cache size = 6414",
    "sampler chain: logits -> logit-bias -> penalties -> dry -> top-n-sigma -> top-k",
    "common_init_from_params: setting dry_penalty_last_n to ctx_size = 2048",
    "srv          init: error_handler and exception handlers registered",
    "main: chat template, example_format: '<start_of_turn>user",
    "srv  llama_server: listening on http://127.0.0.1:8080",
    "W load: special_eos_id is not in special_eog_ids - the tokenizer config may be incorrect",
]

FATAL_LLAMACPP = [
    "srv  llama_server: exiting due to model loading error",
    "E srv  llama_server: exiting due to model loading error",
    "error: invalid argument: --no-mmap",
    'error while handling argument "-ctk": Unsupported cache type: q3_K',
    "main: error: unable to load model",
    "main: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080",
    "/src/ggml/src/ggml-cuda/ggml-cuda.cu:97: CUDA error",
]


@pytest.mark.parametrize("line", BENIGN_LLAMACPP)
def test_benign_llamacpp_lines(line: str) -> None:
    assert not fatal_line(line, "llama.cpp")


@pytest.mark.parametrize("line", FATAL_LLAMACPP)
def test_fatal_llamacpp_lines(line: str) -> None:
    assert fatal_line(line, "llama.cpp")


@pytest.mark.parametrize(
    ("engine", "line"),
    [
        ("vllm", "(EngineCore_DP0 pid=1) ERROR 01-01 [core.py:1] EngineCore failed to start."),
        ("vllm", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
        ("sglang", "[2025-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback"),
        ("sglang", "sglang serve: error: ambiguous option: --cuda-graph-max-bs could match"),
        ("trtllm", "[TensorRT-LLM][ERROR] Assertion failed: mem > 0"),
        ("ollama", "Error: llama runner process has terminated: signal: killed"),
        ("command", "OSError: [Errno 98] Address already in use"),
    ],
)
def test_fatal_python_and_go_lines(engine: str, line: str) -> None:
    assert fatal_line(line, engine)


@pytest.mark.parametrize(
    ("engine", "line"),
    [
        ("vllm", "WARNING 01-01 00:00:00 [config.py:1] error_on_invalid_tokens is deprecated"),
        ("vllm", "INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 52.1 GiB"),
        ("sglang", "[2025-01-01 00:00:00] server_args=ServerArgs(log_level='error')"),
        ("sglang", "[2025-01-01 00:00:00 TP0] Capture cuda graph begin."),
        ("vllm", "(raylet) INFO: error reporting enabled"),
    ],
)
def test_benign_python_lines(engine: str, line: str) -> None:
    assert not fatal_line(line, engine)


def _real(name: str) -> str:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{name} not captured (llama-server binary missing when tests were written)")
    return path.read_text(errors="replace")


@pytest.mark.parametrize(
    "name",
    ["llamacpp_healthy.log", "llamacpp_healthy_verbose.log", "llamacpp_healthy_verbose_q8.log"],
)
def test_real_healthy_llama_server_log_has_no_fatal_line(name: str) -> None:
    lines = _real(name).splitlines()
    assert len(lines) >= 9
    assert [ln for ln in lines if fatal_line(ln, "llama.cpp")] == []


def test_real_refused_llama_server_log() -> None:
    text = _real("llamacpp_refused_ctv_q4_0_fa_off.log")
    assert any(fatal_line(ln, "llama.cpp") for ln in text.splitlines())
    d = classify(text, engine="llama.cpp", exit_code=1)
    assert d.category is Category.INVALID_CONFIG
    assert any("quantized V cache requires flash_attn" in e for e in d.evidence)
    assert d.remedy and "--flash-attn on" in d.remedy
