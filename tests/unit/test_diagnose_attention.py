"""Attention backends that refuse a model or a flag set: the texts SGLang, vLLM and
flashinfer print, and the category each one implies."""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.verdict import Category

SGLANG_MLA = """\
[2026-02-11 14:03:55 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/lib/python3.12/dist-packages/sglang/srt/layers/attention/trtllm_mla_backend.py", \
line 402, in forward_decode
    raw_out = flashinfer.decode.trtllm_batch_decode_with_kv_cache_mla(
  File "/usr/lib/python3.12/dist-packages/flashinfer/mla.py", line 611, in \
trtllm_batch_decode_with_kv_cache_mla
    raise ValueError(f"Expected qk_nope_head_dim == 128, got {qk_nope_head_dim}")
ValueError: Expected qk_nope_head_dim == 128, got 192
"""

VLLM_SELECTED = """\
ERROR 03-04 10:00:31 [core.py:708] EngineCore failed to start.
ERROR 03-04 10:00:31 [core.py:708] Traceback (most recent call last):
ERROR 03-04 10:00:31 [core.py:708]   File "/usr/lib/python3.12/dist-packages/vllm/v1/\
attention/selector.py", line 118, in _cached_get_attn_backend
ERROR 03-04 10:00:31 [core.py:708] ValueError: Selected backend AttentionBackendEnum.{be} is \
not valid for this configuration. Reason: [{reasons}]
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}
"""


def test_sglang_mla_head_dim_assertion_is_the_models_shape() -> None:
    d = classify(SGLANG_MLA, engine="sglang", exit_code=1)
    assert d.category is Category.MODEL_INCOMPATIBLE
    assert d.evidence[0] == "ValueError: Expected qk_nope_head_dim == 128, got 192"
    assert d.remedy and "--attention-backend" in d.remedy


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Expected kv_lora_rank == 512, got 256",
        "ValueError: Expected qk_rope_head_dim == 64, got 32",
        "ValueError: Expected head dim 576 for query and kv_cache, got 512 and 512",
        "RuntimeError: Unsupported head_dim: 192",
        "RuntimeError: Unsupported head size: 80",
        "ValueError: Head size 80 is not supported by FlashAttention. Supported head sizes "
        "are: [32, 64, 96, 128, 160, 192, 224, 256]. Set --attention-backend=FLEX_ATTENTION",
    ],
)
@pytest.mark.parametrize("engine", ["sglang", "vllm", None])
def test_head_dimension_refusals_of_the_kernels(line: str, engine: str | None) -> None:
    d = classify(line + "\n", engine=engine, exit_code=1)
    assert d.category is Category.MODEL_INCOMPATIBLE, d
    assert d.remedy and "attention backend" in d.remedy


@pytest.mark.parametrize(
    ("line", "engine"),
    [
        (
            "ValueError: Selected backend FLASHINFER is not valid for this configuration. "
            "Reason: ['head_size not supported']",
            "vllm",
        ),
        ("RuntimeError: trtllm_mha does not support MLA models.", "sglang"),
        ("RuntimeError: trtllm_mha does not support sliding window attention.", "sglang"),
    ],
)
def test_engine_backends_refusing_the_models_attention(line: str, engine: str) -> None:
    for name in (engine, None):
        d = classify(line + "\n", engine=name, exit_code=1)
        assert d.category is Category.MODEL_INCOMPATIBLE, (name, d)
        assert d.remedy and "--attention-backend" in d.remedy


@pytest.mark.parametrize(
    ("reasons", "category", "in_remedy"),
    [
        ("'kv_cache_dtype not supported'", Category.INVALID_CONFIG, "--kv-cache-dtype"),
        ("'block_size not supported'", Category.INVALID_CONFIG, "--block-size"),
        ("'head_size not supported'", Category.MODEL_INCOMPATIBLE, "--attention-backend"),
        ("'non-MLA not supported'", Category.MODEL_INCOMPATIBLE, "--attention-backend"),
        ("'sink setting not supported'", Category.MODEL_INCOMPATIBLE, "--attention-backend"),
        (
            "'compute capability not supported', 'kv_cache_dtype not supported'",
            Category.UNSUPPORTED_HARDWARE,
            "GPU",
        ),
    ],
)
def test_vllm_selected_backend_reasons_decide(
    reasons: str, category: Category, in_remedy: str
) -> None:
    log = VLLM_SELECTED.format(be="FLASH_ATTN", reasons=reasons)
    d = classify(log, engine="vllm", exit_code=1)
    assert d.category is category, d
    assert any("is not valid for this configuration" in e for e in d.evidence)
    assert d.remedy and in_remedy in d.remedy


def test_vllm_kv_dtype_refusal_names_the_backend_and_another_choice() -> None:
    log = VLLM_SELECTED.format(be="FLASH_ATTN", reasons="'kv_cache_dtype not supported'")
    d = classify(log, engine="vllm", exit_code=1)
    assert d.category is Category.INVALID_CONFIG
    assert d.remedy is not None
    assert "FLASH_ATTN" in d.remedy and "another --attention-backend" in d.remedy
    assert "--kv-cache-dtype auto" in d.remedy


def test_vllm_mla_prefill_backend_and_no_valid_backend() -> None:
    prefill = (
        "ValueError: Selected MLA prefill backend TRTLLM_RAGGED is not valid for this "
        "configuration. Reason: ['dtype not supported']\n"
    )
    assert classify(prefill, engine="vllm", exit_code=1).category is Category.INVALID_CONFIG
    none_valid = (
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
        "head_size=192, dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=None, "
        "use_mla=True). Reasons: {FLASH_ATTN_MLA: [head_size not supported]}.\n"
    )
    d = classify(none_valid, engine="vllm", exit_code=1)
    assert d.category is Category.MODEL_INCOMPATIBLE


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: trtllm_mha does not support kv cache dtype 'fp8_e5m2'. Supported: "
        "['bfloat16', 'fp8_e4m3'].",
        "RuntimeError: trtllm_mha does not support custom kv cache dtype 'fp8_e5m2' (only "
        "'auto' or bfloat16).",
        "RuntimeError: Page size 8 is not supported for trtllm_mha. It should be one of "
        "[16, 32, 64].",
        "RuntimeError: trtllm_mha does not support speculative decoding with topk > 1.",
    ],
)
def test_sglang_backend_capability_refusals_are_flag_choices(line: str) -> None:
    d = classify(line + "\n", engine="sglang", exit_code=1)
    assert d.category is Category.INVALID_CONFIG, d
    assert d.remedy and "--attention-backend" in d.remedy
