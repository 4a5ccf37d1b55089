"""The CLI over the real llama-server: Ctrl-C, and resuming a sweep from the store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from bringup.store import Store
from bringup.store.rows import TrialRow
from bringup.trial import INTERRUPT_GRACE_S

pytestmark = pytest.mark.integration

GRID = '[plan]\nplanner = "grid"\n'


def _bringup(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    exe = Path(sys.executable).parent / "bringup"
    return subprocess.Popen(
        [str(exe), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


# a sweep of a reference and two trials, each launched, checked and benchmarked: about 100 s on
# a quiet 2-core machine, over 300 s beside two CPU hogs; the bound only catches a stuck sweep
SWEEP_BOUND_S = 1200.0


def _output(proc: subprocess.Popen[bytes]) -> str:
    """What the sweep printed; a sweep still running at the bound is stopped as Ctrl-C
    would stop it (its engine with it) before the test fails."""
    try:
        return proc.communicate(timeout=SWEEP_BOUND_S)[0].decode()
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=INTERRUPT_GRACE_S + 30)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _cli_round_trip_s() -> float:
    """Wall time of one ``bringup --version`` now: imports, start and exit of the CLI."""
    exe = Path(sys.executable).parent / "bringup"
    t0 = time.monotonic()
    subprocess.run([str(exe), "--version"], capture_output=True, check=True, timeout=300)
    return time.monotonic() - t0


def _wait_for_stage(db: Path, stage: str, proc: subprocess.Popen[bytes]) -> TrialRow:
    """The first trial row that reached ``stage`` with its engine running (bringup alive)."""
    while proc.poll() is None:
        time.sleep(0.1)
        if db.exists():
            for row in Store(db).trials():
                if row.pid and row.status == "running" and row.stage == stage:
                    return row
    out = proc.stdout.read().decode() if proc.stdout else ""
    raise AssertionError(
        f"bringup exited ({proc.returncode}) before a trial reached {stage}:\n{out}"
    )


def test_ctrl_c_stops_engine_and_marks_trial(
    gemma_path: str, spec_text_factory: Callable[..., str], tmp_path: Path
) -> None:
    # A benchmark of 100000 requests holds the trial open for hours: the signal always
    # lands mid-trial, however fast or slow the machine is.
    (tmp_path / "s.toml").write_text(spec_text_factory(gemma_path, GRID, requests=100_000))
    proc = _bringup("sweep", "s.toml", "--db", "b.db", cwd=tmp_path)
    engine_pid: int | None = None
    try:
        row = _wait_for_stage(tmp_path / "b.db", "benchmarked", proc)
        # What bringup does after SIGINT: cancel the trial, SIGTERM the engine (SIGKILL after
        # INTERRUPT_GRACE_S), write the store, exit; each part as slow as a CLI round trip is
        # now, so the wait is that grace plus round trips measured at this moment.
        budget_s = INTERRUPT_GRACE_S + 10 * _cli_round_trip_s() + 5
        engine_pid = row.pid
        os.kill(proc.pid, signal.SIGINT)  # the bringup process this test started
        proc.wait(timeout=budget_s)
    finally:
        if proc.poll() is None:  # the assertion below reports it; leave nothing running
            proc.kill()
            proc.wait()
            if engine_pid is not None and not _gone(engine_pid):
                psutil.Process(engine_pid).kill()  # started by the bringup this test started
    assert engine_pid is not None
    out = proc.stdout.read().decode() if proc.stdout else ""
    # bringup stops its engine before it exits; a reaped or reparented zombie is gone
    t0 = time.monotonic()
    while not _gone(engine_pid) and time.monotonic() - t0 < budget_s:
        time.sleep(0.05)
    assert _gone(engine_pid), f"the engine outlived bringup's Ctrl-C by {budget_s:.0f} s"
    assert proc.returncode == 130, out
    rows = Store(tmp_path / "b.db").trials()
    assert rows[-1].status == "interrupted"
    assert "interrupted" in out


def test_rerun_resumes_from_store(
    gemma_path: str, spec_text_factory: Callable[..., str], tmp_path: Path
) -> None:
    (tmp_path / "s.toml").write_text(spec_text_factory(gemma_path, GRID))
    first = _bringup("sweep", "s.toml", "--db", "b.db", "--max-trials", "2", cwd=tmp_path)
    out1 = _output(first)
    assert first.returncode in (0, 1), out1
    second = _bringup("sweep", "s.toml", "--db", "b.db", cwd=tmp_path)
    out2 = _output(second)
    assert second.returncode == 0, out2
    store = Store(tmp_path / "b.db")
    runs = store.db.execute("SELECT id FROM runs ORDER BY created").fetchall()
    rows = store.trials(runs[-1][0])
    reused = [r for r in rows if r.reused_from]
    launched = [r for r in rows if not r.reused_from]
    assert len(reused) == 2, "the two configurations decided by the first run are not relaunched"
    assert len(launched) == 2
    assert "launch command:" in out2
    # the refused combination is explained with llama-server's own line
    assert "flash_attn" in out2
