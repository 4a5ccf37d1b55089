"""What one Ray trial asks for: the accelerators its engine's parallelism flags occupy, read
through the engine adapter (flag spellings, aliases and arity from the engine's help), not by
pairing ``launch.args`` two by two."""

from __future__ import annotations

import sys

import pytest

from bringup.engines.registry import get_engine
from bringup.executors.ray import gpus_for
from bringup.spec import Spec, parse_spec


@pytest.fixture(autouse=True)
def _captured_help(monkeypatch: pytest.MonkeyPatch) -> None:
    # no engine installed: every adapter reads the help captured with bringup
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")


def _spec(engine: str, args: list[str], extra: str = "") -> Spec:
    return parse_spec(
        f'[engine]\nname = "{engine}"\n[model]\npath = "Qwen/Qwen3-8B"\n'
        f"[launch]\nargs = {args!r}\n{extra}".replace("'", '"')
    )


def test_a_bare_switch_before_the_parallel_flag_does_not_shift_the_pairs() -> None:
    # ["--enforce-eager", "--tensor-parallel-size", "4"] paired two by two reads
    # {"--enforce-eager": "--tensor-parallel-size", "4": ...}: one GPU instead of four
    spec = _spec("vllm", ["--enforce-eager", "--tensor-parallel-size", "4"])
    assert gpus_for(spec, get_engine("vllm"), {}, True) == 4.0


def test_short_aliases_and_the_trials_own_flags_multiply() -> None:
    spec = _spec("vllm", ["--trust-remote-code", "-pp", "2"])
    assert gpus_for(spec, get_engine("vllm"), {"-tp": 2}, True) == 4.0
    # the trial's flag overrides the fixed one
    assert gpus_for(spec, get_engine("vllm"), {"-pp": 1}, True) == 1.0


def test_each_engine_counts_its_own_flags() -> None:
    sglang = _spec("sglang", ["--enable-torch-compile", "--tp-size", "2", "--dp-size", "2"])
    assert gpus_for(sglang, get_engine("sglang"), {}, True) == 4.0
    # with DP attention the DP ranks live inside the TP group (SGLang's rule, not ours)
    assert gpus_for(sglang, get_engine("sglang"), {"--enable-dp-attention": True}, True) == 2.0
    # llama.cpp is one process whatever it offloads
    llama = _spec("llama.cpp", ["-ngl", "99", "--split-mode", "layer"])
    assert gpus_for(llama, get_engine("llama.cpp"), {}, True) == 1.0


def test_the_spec_wins_and_a_cluster_without_the_resource_asks_for_none() -> None:
    spec = _spec("vllm", ["--tensor-parallel-size", "4"], "[resources]\ngpus = 8\n")
    assert gpus_for(spec, get_engine("vllm"), {}, True) == 8.0
    plain = _spec("vllm", [])
    assert gpus_for(plain, get_engine("vllm"), {}, False) == 0.0
    assert gpus_for(plain, get_engine("vllm"), {}, True) == 1.0
