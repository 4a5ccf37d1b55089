"""GPU end to end: the sweep of scripts/gpu/gpu-spec.toml on a CUDA llama-server.

Runs when ``nvidia-smi`` answers and ``BRINGUP_CUDA_LLAMA_SERVER`` names a llama-server
built with CUDA; skips otherwise. The model is ``BRINGUP_GPU_MODEL`` or the builtin Gemma 3
270M. ``BRINGUP_GPU_E2E_WALL_S`` shortens the planner's wall-time budget (seconds).
What a GPU run must show: the sweep picks a winner, the winner offloads layers (its flags
and llama-server's own log say so), and the fingerprint names the GPU nvidia-smi reports,
with its compute capability (9.0 on Hopper).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bringup
from bringup.builtin_models import resolve_builtin
from bringup.errors import ModelNotFoundError
from bringup.fingerprint import hardware_label
from bringup.store import Store

pytestmark = pytest.mark.e2e

SPEC = Path(__file__).resolve().parents[2] / "scripts" / "gpu" / "gpu-spec.toml"
OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")


def _smi_gpus() -> list[tuple[str, str]]:
    """(name, compute capability) of each GPU, as nvidia-smi reports them."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = [tuple(p.strip() for p in line.split(",")[:2]) for line in out.splitlines() if line]
    return [(r[0], r[1]) for r in rows if len(r) == 2]


@pytest.fixture(scope="module")
def smi_gpus() -> list[tuple[str, str]]:
    gpus = _smi_gpus()
    if not gpus:
        pytest.skip("no NVIDIA GPU answers nvidia-smi here")
    return gpus


@pytest.fixture(scope="module")
def cuda_server() -> str:
    binary = os.environ.get("BRINGUP_CUDA_LLAMA_SERVER")
    if not binary:
        pytest.skip("BRINGUP_CUDA_LLAMA_SERVER does not name a CUDA llama-server")
    if not Path(binary).is_file():
        pytest.skip(f"BRINGUP_CUDA_LLAMA_SERVER={binary} is not a file")
    return binary


@pytest.fixture(scope="module")
def gpu_model() -> str:
    given = os.environ.get("BRINGUP_GPU_MODEL")
    if given:
        if not Path(given).is_file():
            pytest.skip(f"BRINGUP_GPU_MODEL={given} is not a file")
        return given
    try:
        return str(resolve_builtin("gemma3-270m"))
    except ModelNotFoundError:
        pytest.skip("the Gemma 3 270M model is not installed (set BRINGUP_GPU_MODEL)")


def _pythonpath() -> str:
    """The child imports the bringup this test imported, also from a relative PYTHONPATH."""
    here = str(Path(bringup.__file__).resolve().parents[1])
    rest = [str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([here, *rest])


def _spec_text(server: str, model: str) -> str:
    text = SPEC.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^binary = .*$", f'binary = "{server}"', text)
    text = re.sub(r"(?m)^path = .*$", f'path = "{model}"', text)
    wall = os.environ.get("BRINGUP_GPU_E2E_WALL_S")
    if wall:
        text = re.sub(r"(?m)^max_wall_s = .*$", f"max_wall_s = {float(wall):g}", text)
    return text


def test_gpu_sweep_offloads_and_fingerprints_the_gpu(
    smi_gpus: list[tuple[str, str]], cuda_server: str, gpu_model: str, tmp_path: Path
) -> None:
    (tmp_path / "gpu-spec.toml").write_text(_spec_text(cuda_server, gpu_model))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from bringup.cli.main import main; main()",
            "sweep",
            "gpu-spec.toml",
            "--db",
            "gpu.db",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", "PYTHONPATH": _pythonpath()},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out

    store = Store(tmp_path / "gpu.db")
    try:
        run = store.run()
        assert run is not None and run["winner_trial"], out
        winner = store.trial(run["winner_trial"])
        trials = store.trials(run["id"])
    finally:
        store.close()
    assert winner is not None
    assert winner.status == "passed"

    # The winner offloads layers: by its flags, and by llama-server's own account.
    assert int(winner.flags["-ngl"]) > 0, winner.flags
    log = Path(winner.log_path).read_text(encoding="utf-8", errors="replace")
    found = OFFLOADED.search(log)
    assert found is not None, "llama-server did not log how many layers it offloaded"
    assert int(found.group(1)) > 0 and int(found.group(1)) == int(found.group(2))

    # The fingerprint names the GPU and its compute capability as nvidia-smi reports them.
    fp_gpus = run["fingerprint"]["gpus"]
    assert [(g["name"], g["compute_capability"]) for g in fp_gpus] == smi_gpus
    name, cap = smi_gpus[0]
    if re.search(r"\bH(100|200)\b", name):
        assert cap == "9.0"
    assert name in hardware_label(run["fingerprint"])
    assert f"sm{cap.replace('.', '')}" in hardware_label(run["fingerprint"])

    # Every launched trial was decided: none left running or unexplained.
    for t in trials:
        assert t.status != "running", t.id
        if t.status == "failed":
            assert t.category, f"{t.id} failed without a category"
