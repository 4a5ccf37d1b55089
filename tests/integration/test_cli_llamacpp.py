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

pytestmark = pytest.mark.integration

GRID = '[plan]\nplanner = "grid"\n'


def _bringup(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    exe = Path(sys.executable).parent / "bringup"
    return subprocess.Popen(
        [str(exe), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_ctrl_c_stops_engine_and_marks_trial(
    gemma_path: str, spec_text_factory: Callable[..., str], tmp_path: Path
) -> None:
    (tmp_path / "s.toml").write_text(spec_text_factory(gemma_path, GRID))
    proc = _bringup("sweep", "s.toml", "--db", "b.db", cwd=tmp_path)
    engine_pid = None
    deadline = time.time() + 120
    while time.time() < deadline and engine_pid is None:
        time.sleep(0.1)
        if (tmp_path / "b.db").exists():
            rows = Store(tmp_path / "b.db").trials()
            if rows and rows[-1].pid and rows[-1].status == "running":
                engine_pid = rows[-1].pid
    assert engine_pid is not None, proc.stdout.read() if proc.stdout else ""
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)  # the bringup process this test started
    proc.wait(timeout=15)
    while not _gone(engine_pid) and time.monotonic() - t0 < 5:
        time.sleep(0.05)
    assert _gone(engine_pid), "the engine outlived bringup's Ctrl-C by 5 s"
    assert proc.returncode == 130
    rows = Store(tmp_path / "b.db").trials()
    assert rows[-1].status == "interrupted"


def test_rerun_resumes_from_store(
    gemma_path: str, spec_text_factory: Callable[..., str], tmp_path: Path
) -> None:
    (tmp_path / "s.toml").write_text(spec_text_factory(gemma_path, GRID))
    first = _bringup("sweep", "s.toml", "--db", "b.db", "--max-trials", "2", cwd=tmp_path)
    out1 = first.communicate(timeout=300)[0].decode()
    assert first.returncode in (0, 1), out1
    second = _bringup("sweep", "s.toml", "--db", "b.db", cwd=tmp_path)
    out2 = second.communicate(timeout=300)[0].decode()
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
