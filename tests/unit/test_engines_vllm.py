"""vLLM adapter: positional model, -O shorthand, health semantics, log reading, profiling."""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import pytest

from bringup.engines.base import HealthState
from bringup.engines.registry import get_engine
from bringup.engines.vllm import VLLMAdapter, non_default_args
from bringup.errors import EngineNotInstalledError
from bringup.spec import Spec, parse_spec


def _spec(engine: str = 'name = "vllm"', extra: str = "") -> Spec:
    return parse_spec(f'[engine]\n{engine}\n[model]\npath = "Qwen/Qwen3-8B"\n{extra}')


def _exe(path: Path) -> Path:
    path.write_text(f"#!{sys.executable}\nprint('hi')\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_registered() -> None:
    assert isinstance(get_engine("vllm"), VLLMAdapter)


def test_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with pytest.raises(EngineNotInstalledError, match="pip install vllm"):
        VLLMAdapter().locate(_spec())


def test_command_line_puts_model_first(tmp_path: Path) -> None:
    exe = _exe(tmp_path / "vllm")
    spec = _spec(f'name = "vllm"\nbinary = "{exe}"\ngpus = [0]')
    argv = VLLMAdapter().build_command(
        spec, {"-O3": True, "--kv-cache-dtype": "fp8", "--enforce-eager": False}, "127.0.0.1", 8123
    )
    assert argv == [
        str(exe), "serve", "Qwen/Qwen3-8B", "--host", "127.0.0.1", "--port", "8123",
        "--optimization-level", "3", "--kv-cache-dtype", "fp8",
    ]  # fmt: skip
    python_form = VLLMAdapter().locate(_spec(f'name = "vllm"\nbinary = "{sys.executable}"'))
    assert python_form[1:] == ["-m", "vllm.entrypoints.cli.main", "serve"]


def test_flags_checked_against_vllm_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    adapter = VLLMAdapter()
    spec = _spec('name = "vllm"\ngpus = [0, 1]\nenv = { VLLM_ATTENTION_BACKEND = "FLASHINFER" }')
    ok = {"--attention-backend": "FLASHINFER", "--max_num_seqs": 64, "-cc.cudagraph_mode": "FULL"}
    problems = adapter.check_flags(spec, {**ok, "-tp": 4, "--task": "embed"})
    assert {p.flag for p in problems} == {"VLLM_ATTENTION_BACKEND", "--task", "engine.gpus"}
    task = next(p for p in problems if p.flag == "--task")
    assert task.replacement == "--runner pooling" and "vLLM 0.33.0" in task.message
    assert adapter.check_flags(_spec(), {**ok, "-O": 2}) == []


def test_health_has_no_loading_phase() -> None:
    adapter = VLLMAdapter()
    assert adapter.health_state(200, b"") is HealthState.READY
    assert adapter.health_state(503, b"") is HealthState.UNHEALTHY


VLLM_LOG = "\n".join(
    [
        "INFO 11-30 10:00:00 [api_server.py:1]  vLLM API server version 0.33.0",
        "INFO 11-30 10:00:00 [utils.py:2] non-default args: {'model': 'Qwen/Qwen3-8B', "
        "'kv_cache_dtype': 'fp8', 'max_num_seqs': 64, 'host': '127.0.0.1'}",
        "INFO 11-30 10:00:05 [core.py:3] Initializing a V1 LLM engine (v0.33.0) with config: "
        "model='Qwen/Qwen3-8B', dtype=torch.bfloat16, quantization=None, enforce_eager=False, "
        "kv_cache_dtype=fp8, tensor_parallel_size=1",
        "INFO 11-30 10:00:09 [cuda.py:4] Using FLASHINFER attention backend out of potential "
        "backends: ['FLASH_ATTN', 'FLASHINFER'].",
        "INFO 11-30 10:00:30 [kv_cache_utils.py:5] GPU KV cache size: 412,000 tokens",
        "INFO 11-30 10:00:40 [api_server.py:6] Starting vLLM server on http://127.0.0.1:8123",
        "INFO:     Application startup complete.",
    ]
)


def test_chosen_from_log_and_ready_line() -> None:
    adapter = VLLMAdapter()
    chosen = adapter.chosen(VLLM_LOG)
    assert chosen["attention_backend"] == "FLASHINFER"
    assert chosen["kv_cache_dtype"] == "fp8"
    assert chosen["max_num_seqs"] == "64"
    assert chosen["version"] == "0.33.0"
    assert chosen["gpu_kv_cache_tokens"] == "412,000"
    assert chosen["enforce_eager"] == "False"
    assert "host" not in non_default_args(VLLM_LOG)
    assert adapter.ready_pattern and re.search(adapter.ready_pattern, VLLM_LOG)
    assert adapter.is_fatal("RuntimeError: Engine core initialization failed. See root cause")
    assert adapter.version_from_info("/version", {"version": "0.33.0"}) == "0.33.0"


def test_profiling_needs_a_launch_flag(tmp_path: Path) -> None:
    prof = VLLMAdapter().profiling(str(tmp_path))
    assert prof is not None and prof.methods == ("POST",)
    assert str(tmp_path) in str(prof.launch_flags["--profiler-config"])
    assert prof.start_request(num_steps=3).json_body == {"max_iterations": 3}


_CORE = "(EngineCore_DP0 pid=2211) "
MEMORY_PROFILE_NEIGHBOUR = "\n".join(
    [
        _CORE + "INFO 12-01 14:39:58 [gpu_model_runner.py:3120] Model loading took 0.5366 GiB",
        _CORE + "ERROR 12-01 14:40:01 [core.py:1012] EngineCore failed to start.",
        _CORE + "ERROR Traceback (most recent call last):",
        _CORE + 'ERROR   File "/site/vllm/v1/worker/gpu_worker.py", line 301, in '
        "determine_available_memory",
        _CORE + "ERROR     assert self.init_snapshot.free_memory > free_gpu_memory, (",
        _CORE + "ERROR AssertionError: Error in memory profiling. Initial free memory 96.1 GiB,"
        " current free memory 101.3 GiB. This happens when other processes sharing the same"
        " container release GPU memory while vLLM is profiling during initialization.",
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ]
)


def test_a_neighbour_freeing_memory_during_profiling_is_transient_not_the_configuration() -> None:
    from bringup.diagnose import classify
    from bringup.verdict import Category, Stage

    diag = classify(MEMORY_PROFILE_NEIGHBOUR, engine="vllm")
    assert diag.rule == "vllm:memory-profiling-neighbour"
    assert diag.transient and diag.category is Category.RUNTIME_CRASH
    assert diag.to_failure(Stage.READY).transient  # the retry wrapper relaunches it once
    assert diag.to_dict()["transient"] is True
    # the same engine core failure without the neighbour's message is no retry
    other = MEMORY_PROFILE_NEIGHBOUR.replace("Error in memory profiling", "Something else")
    other = other.replace("release GPU memory while vLLM is profiling", "did something")
    assert not classify(other, engine="vllm").transient
