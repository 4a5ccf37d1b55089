"""Engine fingerprint: the engine's interpreter, package versions, GPUs from nvidia-smi."""

from __future__ import annotations

import stat
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from bringup.engines import fingerprint
from bringup.engines.fingerprint import gpu_facts, python_fingerprint, python_of


def _exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_python_of_reads_shebangs_and_trampolines(tmp_path: Path) -> None:
    script = _exe(tmp_path / "sglang", f"#!{sys.executable}\nimport sys\n")
    assert python_of([str(script), "serve"]) == sys.executable
    long_path = "/very/long/venv/bin/python3.11"
    trampoline = _exe(
        tmp_path / "vllm", f"#!/bin/sh\n'''exec' {long_path} \"$0\" \"$@\"\n' '''\nimport sys\n"
    )
    assert python_of([str(trampoline)]) == long_path
    assert python_of([sys.executable, "-m", "x"]) == sys.executable
    binary = _exe(tmp_path / "llama-server", "\x7fELF")
    assert python_of([str(binary)]) is None


def test_python_fingerprint_reads_versions_without_importing(tmp_path: Path) -> None:
    script = _exe(tmp_path / "engine", f"#!{sys.executable}\n")
    facts = python_fingerprint([str(script)], ["pydantic", "no-such-dist-xyz"])
    assert facts["pydantic"] == version("pydantic")
    assert "no-such-dist-xyz" not in facts
    assert facts["python"] == sys.version.split()[0]


def test_gpu_facts_from_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [
        "0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 580.95.05, 97887",
        "1, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 580.95.05, 97887",
        "2, NVIDIA H200, 9.0, 580.95.05, 143771",
    ]
    _exe(tmp_path / "nvidia-smi", "#!/bin/sh\n" + "".join(f"echo '{r}'\n" for r in rows))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fingerprint._nvidia_smi.cache_clear()
    try:
        facts = gpu_facts([0, 1])
        assert facts == {
            "gpu_name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            "gpu_count": "2",
            "compute_capability": "12.0",
            "driver": "580.95.05",
            "gpu_memory_mib": "97887",
        }
        assert gpu_facts()["gpu_count"] == "3"
    finally:
        fingerprint._nvidia_smi.cache_clear()


def test_no_nvidia_smi_means_no_gpu_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    fingerprint._nvidia_smi.cache_clear()
    try:
        assert gpu_facts() == {}
    finally:
        fingerprint._nvidia_smi.cache_clear()
