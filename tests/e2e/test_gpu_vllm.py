"""GPU end to end: the short vLLM sweep of scripts/gpu/vllm/vllm-spec-mini.toml on real vLLM.

Runs when ``nvidia-smi`` answers, ``BRINGUP_VLLM_MODEL`` names a local checkpoint folder
(for instance the bf16 Gemma 3 270M that scripts/gpu/vllm/convert_gemma.py writes) and the
interpreter in ``BRINGUP_VLLM_PYTHON`` (default ``python3``) imports vllm; skips otherwise.
What a GPU run must show: the reference passes, vLLM's own choices (attention backend, KV
dtype, CUDA graph mode) are read from its log, the fingerprint carries vLLM, torch, CUDA
and driver versions, and a TP=2 trial on fewer than two GPUs is a classified failure.
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
from bringup.store import Store

pytestmark = pytest.mark.e2e

SPEC = Path(__file__).resolve().parents[2] / "scripts" / "gpu" / "vllm" / "vllm-spec-mini.toml"


def _gpu_count() -> int:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return len([line for line in out.splitlines() if line.strip()])


@pytest.fixture(scope="module")
def vllm_setup() -> tuple[str, str, int]:
    gpus = _gpu_count()
    if not gpus:
        pytest.skip("no NVIDIA GPU answers nvidia-smi here")
    model = os.environ.get("BRINGUP_VLLM_MODEL")
    if not model or not Path(model).is_dir():
        pytest.skip("BRINGUP_VLLM_MODEL does not name a local checkpoint folder")
    python = os.environ.get("BRINGUP_VLLM_PYTHON", "python3")
    probe = subprocess.run([python, "-c", "import vllm"], capture_output=True, timeout=300)
    if probe.returncode != 0:
        pytest.skip(f"{python} cannot import vllm")
    return python, model, gpus


def test_vllm_reference_passes_and_tp2_is_classified(
    vllm_setup: tuple[str, str, int], tmp_path: Path
) -> None:
    python, model, gpus = vllm_setup
    text = SPEC.read_text(encoding="utf-8")
    text = re.sub(
        r"(?m)^binary = .*$", f'binary = "{python} -m vllm.entrypoints.cli.main serve"', text
    )
    text = re.sub(r"(?m)^path = .*$", f'path = "{model}"', text)
    (tmp_path / "spec.toml").write_text(text)
    here = str(Path(bringup.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "200",
        "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from bringup.cli.main import main; main()",
            "sweep",
            "spec.toml",
            "--db",
            "v.db",
            "--max-trials",
            "2",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    out = proc.stdout + proc.stderr
    store = Store(tmp_path / "v.db")
    try:
        run = store.run()
        assert run is not None, out
        trials = {t.flags.get("--tensor-parallel-size"): t for t in store.trials(run["id"])}
    finally:
        store.close()
    ref = trials[1]
    assert ref.status == "passed", out
    assert ref.chosen.get("attention_backend") == "FLASH_ATTN"
    assert ref.chosen.get("kv_cache_dtype") == "auto"
    assert ref.chosen.get("cuda_graphs") == "off"  # the spec passes --enforce-eager
    details = run["fingerprint"]["engine_details"]
    assert run["fingerprint"]["engine_version"] and details.get("torch") and details.get("driver")
    if gpus < 2 and 2 in trials:
        assert trials[2].status == "failed"
        assert trials[2].category == "distributed_failure", trials[2].evidence
