"""SGLang 0.5.17 as it really ran on an H200 (docs/gpu/sglang-h200, the reference trial's log,
unedited): what the adapter reads from it."""

from __future__ import annotations

from pathlib import Path

from bringup.diagnose import stage_reached
from bringup.engines.registry import get_engine

LOG = Path(__file__).parent / "fixtures" / "sglang0517_h200_reference.log"


def test_the_backend_sglang_chose_is_read_from_the_real_log() -> None:
    chosen = get_engine("sglang").chosen(LOG.read_text(encoding="utf-8"))
    assert chosen["attention_backend"] == "triton"
    assert chosen["kv_cache_dtype"] == "auto"
    assert chosen["sampling_backend"] == "pytorch"
    assert chosen["disable_cuda_graph"] == "True"
    assert chosen["model_class"] == "Gemma3ForCausalLM"
    assert int(chosen["max_total_num_tokens"]) > 0


def test_the_real_log_reaches_the_http_server_phase() -> None:
    lines = LOG.read_text(encoding="utf-8").splitlines()
    reached, _ = stage_reached(lines, "sglang")
    assert reached is not None
