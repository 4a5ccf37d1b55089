"""TensorRT-LLM adapter: YAML pseudo-flags, backend-specific refusals, click help."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from bringup.engines.registry import get_engine
from bringup.engines.trtllm import TRTLLMAdapter, write_yaml_options, yaml_options
from bringup.spec import Spec, parse_spec


def _spec(engine: str = 'name = "trtllm"', extra: str = "") -> Spec:
    return parse_spec(f'[engine]\n{engine}\n[model]\npath = "meta-llama/Llama-3.1-8B"\n{extra}')


@pytest.fixture(autouse=True)
def _not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")


def test_registered_under_aliases() -> None:
    assert isinstance(get_engine("tensorrt-llm"), TRTLLMAdapter)
    assert isinstance(get_engine("trtllm-serve"), TRTLLMAdapter)


def test_yaml_options_nest_and_write_once(tmp_path: Path) -> None:
    flags = {"--config.kv_cache_config.dtype": "fp8", "--config.attn_backend": "FLASHINFER"}
    tree = yaml_options({**flags, "--backend": "pytorch"})
    assert tree == {"kv_cache_config": {"dtype": "fp8"}, "attn_backend": "FLASHINFER"}
    first = write_yaml_options(tree, tmp_path)
    again = write_yaml_options(dict(reversed(list(tree.items()))), tmp_path)
    assert first == again and json.loads(first.read_text()) == tree


def test_build_command_passes_generated_config(tmp_path: Path) -> None:
    exe = tmp_path / "trtllm-serve"
    exe.write_text(f"#!{sys.executable}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    spec = _spec(f'name = "trtllm"\nbinary = "{exe}"')
    flags = {"--backend": "trt", "--config.kv_cache_config.dtype": "fp8"}
    argv = TRTLLMAdapter().build_command(spec, flags, "127.0.0.1", 8001)
    assert argv[:7] == [str(exe), "serve", "meta-llama/Llama-3.1-8B", "--host", "127.0.0.1",
                        "--port", "8001"]  # fmt: skip
    assert argv[7:9] == ["--backend", "tensorrt"]
    assert argv[9] == "--config" and json.loads(Path(argv[10]).read_text()) == {
        "kv_cache_config": {"dtype": "fp8"}
    }
    assert not any(a.startswith("--config.") for a in argv)


def test_checks_beyond_the_help() -> None:
    adapter = TRTLLMAdapter()
    spec = _spec()
    assert adapter.check_flags(spec, {"--config.attn_backend": "FLASHINFER", "--tp_size": 2}) == []
    [attn] = adapter.check_flags(spec, {"--config.attn_backend": "FLASH_ATTN"})
    assert "falls back to TRTLLM" in attn.message
    [kv] = adapter.check_flags(spec, {"--backend": "trt", "--config.kv_cache_config.dtype": "fp8"})
    assert "pytorch backend" in kv.message
    [both] = adapter.check_flags(spec, {"--config": "base.yaml", "--config.attn_backend": "TRTLLM"})
    assert both.flag == "--config"
    [unknown] = adapter.check_flags(spec, {"--tp-size": 2})
    assert unknown.replacement == "--tp_size" and "TensorRT-LLM commit 00209af" in unknown.message
    [gpus] = adapter.check_flags(_spec('name = "trtllm"\ngpus = [0]'), {"--tp_size": 2})
    assert gpus.flag == "engine.gpus"


def test_served_model_is_the_model_argument() -> None:
    adapter = TRTLLMAdapter()
    assert adapter.served_model(_spec()) == "meta-llama/Llama-3.1-8B"
    assert adapter.profiling("/tmp") is None
