"""No engine outlives bringup: SIGHUP cleans up like SIGTERM, a SIGKILLed bringup's engine
dies with it, and the next run reconciles what a dead run left (stopping only what is
provably ours: same pid, same start time, same process group)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bringup.server.orphans import reconcile
from bringup.store import Store, launched
from bringup.testing.hostile import sim_spec

BRINGUP = [sys.executable, "-c", "from bringup.cli.main import main; main()"]


def _engine_of(db: Path, timeout_s: float = 60.0) -> tuple[int, float]:
    """The pid and start time of the engine the running sweep launched."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if db.exists():
            with sqlite3.connect(db) as conn:
                try:
                    row = conn.execute("SELECT pid FROM trials WHERE pid IS NOT NULL").fetchone()
                except sqlite3.OperationalError:
                    row = None
            if row:
                started = launched.start_time(int(row[0]))
                if started is not None:
                    return int(row[0]), started
        time.sleep(0.1)
    raise AssertionError("the sweep launched no engine")


def _gone(pid: int, started: float, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not launched.same_process(pid, started):
            return True
        time.sleep(0.1)
    return False


def _cleanup(pid: int, started: float) -> None:
    """End an engine the test's own bringup left behind (it is ours: same start time)."""
    if launched.same_process(pid, started):
        os.killpg(pid, signal.SIGKILL)


def _start_sweep(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    spec = sim_spec(tmp_path, startup_s=6000.0)  # a minute of start-up: alive when signalled
    db = tmp_path / "b.db"
    proc = subprocess.Popen(
        [*BRINGUP, "sweep", str(spec), "--db", str(db), "--runs-dir", str(tmp_path / "runs")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    return proc, db


def _statuses(db: Path) -> tuple[str, list[str]]:
    with sqlite3.connect(db) as conn:
        run = conn.execute("SELECT status FROM runs").fetchone()[0]
        trials = [r[0] for r in conn.execute("SELECT status FROM trials")]
    return run, trials


def test_sighup_stops_the_engine_and_marks_the_run_interrupted(tmp_path: Path) -> None:
    proc, db = _start_sweep(tmp_path)
    pid, started = _engine_of(db)
    try:
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=60) == 130
        assert _gone(pid, started, 10.0), "the engine outlived bringup"
        run, trials = _statuses(db)
        assert run == "interrupted" and trials == ["interrupted"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _cleanup(pid, started)


def test_a_sigkilled_bringup_takes_its_engine_and_the_next_run_reconciles(
    tmp_path: Path,
) -> None:
    proc, db = _start_sweep(tmp_path)
    pid, started = _engine_of(db)
    try:
        proc.kill()
        proc.wait(timeout=30)
        assert _gone(pid, started, 10.0), "the engine outlived a SIGKILLed bringup"
        assert _statuses(db)[0] == "running"  # nobody could record anything
        notes = reconcile(Store(db))
        assert any("marked interrupted" in n for n in notes), notes
        run, trials = _statuses(db)
        assert run == "interrupted" and trials == ["interrupted"]
    finally:
        _cleanup(pid, started)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("ours", [True, False])
def test_reconcile_stops_only_what_is_provably_ours(tmp_path: Path, ours: bool) -> None:
    store = Store(tmp_path / "b.db")
    run_id = store.create_run(
        spec_path=None, spec_digest="d", spec_json="{}", engine="e", fingerprint={},
        fingerprint_key="f", run_dir="",
    )  # fmt: skip
    orphan = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        started = launched.start_time(orphan.pid)
        assert started is not None
        recorded = started if ours else started - 100.0  # a different process under that pid
        store.db.execute(
            "INSERT INTO launched VALUES (?,?,?,?,?,?,?)",
            (orphan.pid, recorded, orphan.pid, run_id, f"{run_id}-t001", _dead_pid(), 1.0),
        )
        notes = reconcile(store, grace_s=5.0)
        if ours:
            assert orphan.wait(timeout=10) == -signal.SIGTERM
            assert any(f"pid {orphan.pid}" in n for n in notes)
        else:
            time.sleep(0.5)
            assert orphan.poll() is None and psutil.pid_exists(orphan.pid)
            assert notes == []
        assert launched.rows(store) == []  # forgotten either way
    finally:
        if orphan.poll() is None:
            orphan.kill()
        orphan.wait()


def test_a_live_owner_keeps_its_engines(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    orphan = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        started = launched.start_time(orphan.pid)
        me = launched.start_time(os.getpid())
        store.db.execute(
            "INSERT INTO launched VALUES (?,?,?,?,?,?,?)",
            (orphan.pid, started, orphan.pid, "r", "r-t001", os.getpid(), me),
        )
        assert reconcile(store) == [] and orphan.poll() is None
        assert len(launched.rows(store)) == 1
    finally:
        orphan.kill()
        orphan.wait()
