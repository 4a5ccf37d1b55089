"""Every example spec loads, names a real engine and validates against that engine's help."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bringup.engines.pyengine import PythonEngineAdapter
from bringup.engines.registry import get_engine
from bringup.spec import load_spec

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml"))


@pytest.fixture(autouse=True)
def _engines_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    # validate against the captured help, as on a laptop planning for a GPU box
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")


def test_one_example_per_seed_situation() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {
        "sglang-nvfp4-moe-backends",
        "sglang-nextn-speculative",
        "sglang-mla-attention",
        "vllm-attention-kv-seqs",
        "trtllm-backend-kv",
        "command-tgi",
    } <= names
    readme = (EXAMPLES[0].parent / "README.md").read_text()
    assert all(f"{name}.toml" in readme for name in names)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_validates_against_engine_help(path: Path) -> None:
    spec = load_spec(path)
    adapter = get_engine(spec.engine.name)
    adapter.check_model(spec)
    configs = [*spec.configs(), spec.reference_config()]
    assert len(configs) >= 2
    for config in configs:
        assert adapter.check_flags(spec, config) == [], config
    if isinstance(adapter, PythonEngineAdapter):
        table = adapter.flag_table(spec)
        assert "shipped with bringup" in table.source
        # every searched flag is one the engine's help lists, not merely tolerated
        for flag in spec.space:
            assert table.lookup(flag).spec is not None, flag


def test_nextn_example_uses_the_current_flag_names() -> None:
    spec = load_spec(EXAMPLES[0].parent / "sglang-nextn-speculative.toml")
    assert "--mamba-radix-cache-strategy" in spec.launch.args
    assert "--mamba-scheduler-strategy" not in spec.launch.args
    assert not any("eagle-topk" in a for a in spec.launch.args)
    adapter = get_engine("sglang")
    seed_flags = {"--mamba-scheduler-strategy": "extra_buffer", "--speculative-algorithm": "NEXTN"}
    [problem] = adapter.check_flags(spec, seed_flags)
    assert problem.replacement == "--mamba-radix-cache-strategy"


def test_mla_example_refuses_the_removed_backend() -> None:
    spec = load_spec(EXAMPLES[0].parent / "sglang-mla-attention.toml")
    [problem] = get_engine("sglang").check_flags(spec, {"--attention-backend": "cutlass_mla"})
    assert "trtllm_mla" in (problem.replacement or "")
