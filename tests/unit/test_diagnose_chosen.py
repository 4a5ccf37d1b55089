"""extract_chosen: what a healthy engine log says it selected."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.diagnose import extract_chosen

FIXTURES = Path(__file__).parent / "fixtures"

LLAMACPP = (FIXTURES / "diagnose_chosen_llamacpp.log").read_text()

VLLM = (FIXTURES / "diagnose_chosen_vllm.log").read_text()

SGLANG = (FIXTURES / "diagnose_chosen_sglang.log").read_text()


def test_llamacpp_lines() -> None:
    chosen = extract_chosen(LLAMACPP, "llama.cpp")
    assert chosen["flash_attn"] == "on"
    assert chosen["flash_attn_requested"] == "auto"
    assert chosen["kv_type_k"] == chosen["kv_type_v"] == "q8_0"
    assert chosen["n_slots"] == "4"
    assert chosen["n_ctx_slot"] == "512"
    assert chosen["n_ctx"] == "2048"
    assert chosen["backend"] == "CPU"


def test_llamacpp_cuda_backend_and_fa_off() -> None:
    log = (
        "load_tensors: offloaded 19/19 layers to GPU\n"
        "load_tensors:        CUDA0 model buffer size =   241.38 MiB\n"
        "llama_context: flash_attn    = disabled\n"
    )
    chosen = extract_chosen(log, "llama.cpp")
    assert chosen["backend"] == "CUDA"
    assert chosen["gpu_layers"] == "19/19"
    assert chosen["flash_attn"] == "off"


def test_vllm_lines() -> None:
    chosen = extract_chosen(VLLM, "vllm")
    assert chosen["attention_backend"] == "FLASH_ATTN"
    assert chosen["flash_attn_version"] == "3"
    assert chosen["moe_backend"] == "Marlin"
    assert chosen["kv_cache_dtype"] == "fp8_e4m3"
    assert chosen["quantization"] == "fp8"
    assert chosen["dtype"] == "bfloat16"
    assert chosen["cuda_graphs"] == "on"


def test_sglang_lines() -> None:
    chosen = extract_chosen(SGLANG, "sglang")
    assert chosen["attention_backend"] == "flashinfer"
    assert chosen["kv_cache_dtype"] == "fp8_e4m3"
    assert chosen["moe_runner_backend"] == "auto"
    assert chosen["model_class"] == "Qwen3ForCausalLM"
    assert chosen["weight_dtype"] == "bfloat16"
    assert chosen["kv_tokens"] == "412345"
    assert chosen["cuda_graphs"] == "on"
    assert "quantization" not in chosen  # None is not a choice


def test_unknown_log_says_nothing() -> None:
    assert extract_chosen("hello world\n", "vllm") == {}


def _real(name: str) -> str:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{name} not captured")
    return path.read_text(errors="replace")


def test_real_llama_server_default_verbosity() -> None:
    chosen = extract_chosen(_real("llamacpp_healthy.log"), "llama.cpp")
    assert chosen == {"n_slots": "4", "n_ctx_slot": "2048", "kv_unified": "true"}


def test_real_llama_server_trace_verbosity_fa_auto() -> None:
    chosen = extract_chosen(_real("llamacpp_healthy_verbose.log"), "llama.cpp")
    assert chosen["flash_attn_requested"] == "auto"
    assert chosen["flash_attn"] == "on"  # auto resolved on this CPU build
    assert chosen["kv_type_k"] == chosen["kv_type_v"] == "f16"
    assert chosen["backend"] == "CPU"
    assert chosen["n_ctx"] == "2048"


def test_real_llama_server_quantized_kv_forces_fa() -> None:
    chosen = extract_chosen(_real("llamacpp_healthy_verbose_q8.log"), "llama.cpp")
    assert chosen["flash_attn"] == "on"
    assert chosen["kv_type_k"] == chosen["kv_type_v"] == "q8_0"


def test_llamacpp_mixed_kv_flash_attention_fallback_is_visible() -> None:
    from bringup.diagnose import extract_chosen

    line = (
        "0.05.100.000 W ggml_cuda_flash_attn_ext: no FlashAttention vector kernel compiled for"
        " K/V types f16-q8_0, converting K and V to f16 instead (slow)"
    )
    assert extract_chosen(line, engine="llama.cpp")["fa_kv_fallback"] == "f16-q8_0"
    assert "fa_kv_fallback" not in extract_chosen(
        "llama_context: flash_attn = enabled", "llama.cpp"
    )
