"""Hostile conditions with the real llama-server: killed under load, bringup killed, an
API key the engine and bringup both see."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.spec import parse_spec
from bringup.store import Store, launched
from bringup.sweep import SweepEvent, SweepOptions, prepare, run_sweep
from bringup.testing.hogs import Slack
from bringup.verdict import Stage, Status

pytestmark = pytest.mark.integration
KEY = "sk-integration-0123456789abcdef"


def test_llama_server_crashing_under_load_is_a_death_not_load_errors(
    spec_text_factory: Callable[..., str], gemma_path: str, tmp_path: Path
) -> None:
    spec_text = spec_text_factory
    spec = parse_spec(spec_text(gemma_path).replace("warmup = 0", "warmup = 0\nduration_s = 8"))
    spec.space = {"--cache-type-v": ["f16"]}
    spec.reference = {"--cache-type-v": "f16"}
    killed: list[int] = []

    def on_event(e: SweepEvent) -> None:
        if e.stage is Stage.BENCHMARKED and e.trial.pid and not killed:
            killed.append(e.trial.pid)
            # a crash of its own (a SIGKILL from outside would be interrupted, then retried)
            asyncio.get_running_loop().call_later(1.5, os.kill, e.trial.pid, signal.SIGSEGV)

    outcome = asyncio.run(
        run_sweep(
            prepare(spec), Store(tmp_path / "b.db"), SweepOptions(runs_dir=str(tmp_path)), on_event
        )
    )
    [result] = outcome.results
    assert killed and result.status is Status.FAILED and result.failure is not None
    assert result.failure.category.value != "errors_under_load"
    assert "killed by SIGSEGV" in result.failure.evidence[0]


def test_a_sigkilled_bringup_takes_llama_server_with_it(
    spec_text_factory: Callable[..., str], gemma_path: str, tmp_path: Path, slack: Slack
) -> None:
    spec_text = spec_text_factory
    spec = tmp_path / "s.toml"
    spec.write_text(spec_text(gemma_path))
    db = tmp_path / "b.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from bringup.cli.main import main; main()", "sweep", str(spec),
         "--db", str(db)],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    engine: tuple[int, float] | None = None
    # however slow the machine, bringup either starts its engine or ends on its own
    # (its start timeout): no fixed deadline of ours to lose a race against
    while engine is None and proc.poll() is None:
        if db.exists():
            try:
                with sqlite3.connect(db) as conn:
                    row = conn.execute("SELECT pid FROM trials WHERE pid IS NOT NULL").fetchone()
            except sqlite3.OperationalError:  # the file exists before its tables do
                row = None
            started = launched.start_time(int(row[0])) if row else None
            engine = (int(row[0]), started) if row and started else None
        time.sleep(0.1)
    assert engine is not None, f"bringup exited {proc.returncode} before its engine started"
    try:
        proc.kill()
        proc.wait(timeout=30)
        # the kernel's parent-death SIGKILL and a reap by init: a few process steps, given
        # as many of them as are measured to take on this machine now
        deadline = time.monotonic() + slack(200)
        while launched.same_process(*engine) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not launched.same_process(*engine), "llama-server outlived a SIGKILLed bringup"
    finally:
        if launched.same_process(*engine):
            os.killpg(engine[0], signal.SIGKILL)


def test_the_api_key_is_in_no_artifact(
    spec_text_factory: Callable[..., str],
    gemma_path: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec_text = spec_text_factory
    text = spec_text(gemma_path).replace('"-t", "2"]', f'"-t", "2", "--api-key", "{KEY}"]')
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    monkeypatch.setenv("SERVER_KEY", KEY)
    work = tmp_path / "work"
    work.mkdir()
    runner = CliRunner()
    db = str(work / "b.db")
    out = runner.invoke(
        cli, ["sweep", str(spec), "--db", db, "--runs-dir", str(work / "runs"),
              "--api-key-env", "SERVER_KEY", "--max-trials", "1"],
    ).output  # fmt: skip
    assert "launch command:" in out, out
    out += runner.invoke(cli, ["report", "--db", db, "--json", str(work / "r.json")]).output
    out += runner.invoke(
        cli, ["deploy", "--db", db, "--to", "script", "--out", str(work / "d")]
    ).output
    assert KEY not in out
    files = [p for p in work.rglob("*") if p.is_file()]
    assert any(p.suffix == ".log" for p in files)
    for p in files:
        assert KEY.encode() not in p.read_bytes(), p
