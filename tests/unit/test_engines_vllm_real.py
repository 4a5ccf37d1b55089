"""vLLM 0.26.0 as it really ran on an H200: its logs read back, its help picked by version.

The fixtures are engine logs of the committed runs, unedited: docs/gpu/vllm/ (the reference,
TP=2 on one GPU, an FP8-KV launch) and docs/gpu/vllm-h200/ (CUDA graphs out of KV-cache
memory beside other start-ups, FA3 refusing an fp8_e5m2 KV cache).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.diagnose import classify, diagnose_hang, stage_reached
from bringup.engines.flagcheck import captured_entry, captured_table, check_config
from bringup.engines.vllm import VLLMAdapter
from bringup.verdict import Category

FIX = Path(__file__).parent / "fixtures"
REFERENCE = FIX / "vllm026_h200_reference.log"
TP2 = FIX / "vllm026_h200_tp2_one_gpu.log"
FP8 = FIX / "vllm026_h200_fp8_kv.log"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_tp2_on_one_gpu_is_a_refused_parallel_size_from_the_real_log() -> None:
    # refused before any process group exists: a parallel size the engine refuses
    d = classify(TP2.read_text(encoding="utf-8"), engine="vllm", exit_code=1)
    assert d.category is Category.INVALID_CONFIG
    assert any(
        "World size (2) is larger than the number of available GPUs (1)" in e for e in d.evidence
    )
    assert d.remedy and "need 2 GPUs but 1 are visible" in d.remedy


@pytest.mark.parametrize(
    ("last_line", "phase"),
    [
        ("non-default args", "resolving the model config"),
        ("Initializing a V1 LLM engine", "starting the engine core"),
        ("world_size=1 rank=0", "connecting to peers (distributed init)"),
        ("Loading weights took", "loading weights"),
        ("GPU KV cache size", "profiling memory and allocating the KV cache"),
        ("init engine (profile, create kv cache, warmup model) took", "engine built"),
        ("Starting vLLM server on", "starting the API server"),
        ("Application startup complete", "ready"),
    ],
)
def test_startup_phase_named_from_the_real_log(last_line: str, phase: str) -> None:
    lines = _lines(REFERENCE)
    cut = next(i for i, line in enumerate(lines) if last_line in line)
    reached, _ = stage_reached(lines[: cut + 1], "vllm")
    assert reached is not None and reached.startswith(phase)


def test_a_hang_after_the_weights_says_so() -> None:
    lines = _lines(REFERENCE)
    cut = next(i for i, line in enumerate(lines) if "Model loading took" in line)
    d = diagnose_hang("\n".join(lines[: cut + 1]), engine="vllm")
    assert d.stage_reached == "loading weights"
    # the generic reading of the same text took the engine config line for CUDA graphs
    cut = next(i for i, line in enumerate(lines) if "Initializing a V1 LLM engine" in line)
    assert stage_reached(lines[: cut + 1], "vllm")[0] == "starting the engine core"
    assert stage_reached(lines[: cut + 1])[0] != "starting the engine core"


def test_chosen_backend_kv_dtype_and_graph_mode_from_the_real_logs() -> None:
    adapter = VLLMAdapter()
    ref = adapter.chosen(REFERENCE.read_text(encoding="utf-8"))
    assert ref["attention_backend"] == "FLASH_ATTN"
    assert ref["kv_cache_dtype"] == "auto"
    assert ref["cuda_graphs"] == "off"
    assert ref["version"] == "0.26.0"
    assert ref["gpu_kv_cache_tokens"] == "3,970,269"
    fp8 = adapter.chosen(FP8.read_text(encoding="utf-8"))
    assert fp8["kv_cache_dtype"] == "fp8"
    assert fp8["gpu_kv_cache_tokens"] == "7,936,921"  # fp8 stores twice the tokens


@pytest.mark.parametrize(
    ("version", "capture"),
    [
        ("0.26.0", "0.26.0"),
        ("0.30.1", "0.26.0"),
        ("0.33.0", "0.33.0"),
        ("0.34.2", "0.33.0"),
        ("0.22.0", "0.26.0"),  # older than every capture: the oldest
        (None, "0.33.0"),
        ("unknown", "0.33.0"),
    ],
)
def test_captured_help_is_picked_by_version(version: str | None, capture: str) -> None:
    assert captured_entry("vllm", version).version == capture


def test_chunked_prefill_switch_renamed_between_0_26_and_0_33() -> None:
    opts = VLLMAdapter.parse_options
    old = captured_table("vllm", opts, "0.26.0")
    new = captured_table("vllm", opts, "0.33.0")
    assert old.version == "0.26.0" and new.version == "0.33.0"
    assert check_config(old, {"--no-enable-chunked-prefill": True}, "vllm") == []
    assert check_config(new, {"--disable-chunked-prefill": True}, "vllm") == []
    (p,) = check_config(new, {"--no-enable-chunked-prefill": True}, "vllm")
    assert p.replacement == "--disable-chunked-prefill"
    (p,) = check_config(old, {"--disable-chunked-prefill": True}, "vllm")
    assert p.replacement == "--no-enable-chunked-prefill"
    # the backends this model was offered on 0.26 are valid values there
    assert check_config(old, {"--attention-backend": "TRITON_ATTN"}, "vllm") == []


GRAPHS_OOM = FIX / "vllm026_h200_graphs_kv_oom_beside_startups.log"
FP8_E5M2 = FIX / "vllm026_h200_fa3_fp8_e5m2.log"


def test_fa3_refusing_fp8_e5m2_is_the_flag_pair_from_the_real_log() -> None:
    """docs/gpu/vllm-h200 t009: FLASH_ATTN (FA3 on Hopper) takes fp8 (e4m3) KV, not e5m2."""
    d = classify(FP8_E5M2.read_text(encoding="utf-8"), engine="vllm", exit_code=1)
    assert d.category is Category.INVALID_CONFIG
    assert any("kv_cache_dtype not supported" in e for e in d.evidence)
    assert d.remedy and "--attention-backend" in d.remedy


def test_no_kv_cache_memory_from_the_real_log_is_gpu_memory() -> None:
    """docs/gpu/vllm-h200 t006: CUDA graphs on, three engines starting on the GPU at once;
    vLLM measured -2.38 GiB for its KV cache. The log reads as out of GPU memory (it is);
    that neighbours caused it is why start-ups on a shared device now take turns."""
    text = GRAPHS_OOM.read_text(encoding="utf-8")
    assert "Available KV cache memory: -2.38 GiB" in text
    d = classify(text, engine="vllm", exit_code=1)
    assert d.category is Category.OOM_GPU
    assert not d.transient  # alone, the same line is this configuration's own verdict


GRAPHS = FIX / "vllm026_h200_cuda_graphs.log"  # docs/gpu/vllm-h200-graphs/, trial t004
FLEX_OOM = FIX / "vllm026_h200_flex_attention_oom.log"  # the same run, trial t006


def test_cuda_graphs_and_their_capture_kinds_from_the_real_log() -> None:
    chosen = VLLMAdapter().chosen(GRAPHS.read_text(encoding="utf-8"))
    assert chosen["cuda_graphs"] == "on"
    assert chosen["cudagraph_mode"] == "PIECEWISE+FULL"  # 0.26's FULL_AND_PIECEWISE
    assert chosen["attention_backend"] == "FLASH_ATTN"
    assert "cudagraph_mode" not in VLLMAdapter().chosen(REFERENCE.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("last_line", "phase"),
    [
        ("Compiling a graph for compile range", "compiling (torch.compile)"),
        ("Capturing CUDA graphs (FULL)", "capturing CUDA graphs"),
        ("Graph capturing finished", "capturing CUDA graphs"),
    ],
)
def test_a_hang_in_compilation_or_capture_names_that_phase(last_line: str, phase: str) -> None:
    lines = _lines(GRAPHS)
    cut = next(i for i, line in enumerate(lines) if last_line in line)
    reached, _ = stage_reached(lines[: cut + 1], "vllm")
    assert reached is not None and reached.startswith(phase)


def test_flex_attention_building_its_block_map_out_of_memory_is_gpu_memory() -> None:
    d = classify(FLEX_OOM.read_text(encoding="utf-8"), engine="vllm", exit_code=1)
    assert d.category is Category.OOM_GPU
    assert not d.transient  # its own allocation, not another process's start-up
    assert any("Tried to allocate 6.77 GiB" in e for e in d.evidence)
    chosen = VLLMAdapter().chosen(FLEX_OOM.read_text(encoding="utf-8"))
    assert chosen["attention_backend"] == "FLEX_ATTENTION"
