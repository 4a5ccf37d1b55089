"""``launch`` and ``probe --reference`` on the real llama-server: the accuracy gate runs.

A q4_0 K/V cache answers the known facts but drifts from the f16 reference (logprob MAD
about 0.2 against a 0.1 limit, tests/integration/test_accuracy_llamacpp.py). ``launch``
runs the reference first (no answers stored yet), fails the candidate with exit 1 and,
with ``--keep-failed``, keeps it up; ``probe --reference RUN`` against it fails with the
drift figure (on three prompts, as a readiness probe would). The reference itself,
launched next, is judged against the stored answers (no second reference trial) and its
probe passes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bringup.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SPEC = """
[engine]
name = "llama.cpp"
[model]
path = "{model}"
[launch]
args = ["-c", "1024", "--no-warmup", "-t", "2"]
start_timeout_s = 120
hang_timeout_s = 60
stop_grace_s = 5
[space]
"--flash-attn" = ["off", "on"]
"--cache-type-k" = ["f16", "q4_0"]
"--cache-type-v" = ["f16", "q4_0"]
[reference]
"--flash-attn" = "off"
"--cache-type-k" = "f16"
"--cache-type-v" = "f16"
[checks]
accuracy_prompts = 6
accuracy_tokens = 16
long_context = false
"""
Q4 = ["--set", "--flash-attn=on", "--set", "--cache-type-k=q4_0", "--set", "--cache-type-v=q4_0"]


def _exe() -> str:
    return str(Path(sys.executable).parent / "bringup")


def _launch(tmp: Path, *args: str) -> tuple[subprocess.Popen[str], dict[str, object]]:
    """``bringup launch --json``: the process, and its JSON line once the server is up."""
    proc = subprocess.Popen(
        [_exe(), "launch", str(tmp / "spec.toml"), "--db", str(tmp / "b.db"), "--json", *args],
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until up (or the process ends)
    if not line:
        proc.wait(timeout=60)
        raise AssertionError(f"launch exited {proc.returncode} without a server")
    return proc, json.loads(line)


def _stop(proc: subprocess.Popen[str]) -> int:
    os.kill(proc.pid, signal.SIGINT)
    return proc.wait(timeout=60)


def _probe(tmp: Path, url: str, run_id: str) -> subprocess.CompletedProcess[str]:
    db = str(tmp / "b.db")
    return subprocess.run(
        [_exe(), "probe", url, "--reference", run_id, "--prompts", "3", "--json", "--db", db],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.timeout(1200)
def test_launch_gate_and_probe_reference_see_q4_drift(
    llama_server: str, gemma_path: str, tmp_path: Path
) -> None:
    (tmp_path / "spec.toml").write_text(SPEC.format(model=gemma_path))
    proc, up = _launch(tmp_path, *Q4, "--keep-failed")
    try:
        assert up["status"] == "failed" and up["category"] == "accuracy_regression", up
        run_id = str(up["trial_id"]).rsplit("-t", 1)[0]
        rows = Store(tmp_path / "b.db").trials(run_id)
        assert [r.purpose for r in rows] == ["reference", "launch"]
        probe = _probe(tmp_path, str(up["url"]), run_id)
        print(probe.stdout)
        assert probe.returncode == 1, probe.stdout + probe.stderr
        got = json.loads(probe.stdout)
        assert got["verdict"].startswith("fail: drifts from the reference")
        assert got["accuracy"]["logprob_mad"] > got["accuracy"]["thresholds"]["max_logprob_mad"]
    finally:
        assert _stop(proc) == 130  # Ctrl-C ends the inspection

    proc, up = _launch(tmp_path)  # the reference, judged against the stored answers
    try:
        assert up["status"] == "passed", up
        run_id = str(up["trial_id"]).rsplit("-t", 1)[0]
        assert [r.purpose for r in Store(tmp_path / "b.db").trials(run_id)] == ["launch"]
        probe = _probe(tmp_path, str(up["url"]), run_id)
        print(probe.stdout)
        assert probe.returncode == 0, probe.stdout + probe.stderr
        got = json.loads(probe.stdout)
        assert "matches the reference" in got["verdict"] and got["reference_prompts"] == 3
    finally:
        _stop(proc)
