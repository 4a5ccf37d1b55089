"""An engine that crashes during the benchmark (SIGSEGV, its own kind of death): the verdict
says the process died, and by which signal, not that requests failed under load. One that
someone else SIGKILLs is ``interrupted`` instead: retried, and never a stored verdict."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from bringup.spec import load_spec
from bringup.store import Store
from bringup.sweep import SweepEvent, SweepOptions, prepare, run_sweep
from bringup.testing.hostile import sim_spec
from bringup.verdict import Stage, Status, TrialResult


def _sweep_killing_once(tmp_path: Path, sig: signal.Signals) -> list[TrialResult]:
    """The sweep of one configuration whose engine gets ``sig`` a second into the load."""
    spec = load_spec(
        sim_spec(
            tmp_path,
            space={"--max-batch": [1]},
            bench={"duration_s": 6.0, "concurrency": [2], "output_tokens": 64},
        )
    )
    killed: list[int] = []

    def on_event(e: SweepEvent) -> None:
        if e.stage is Stage.BENCHMARKED and e.trial.pid and not killed:
            pid = e.trial.pid
            killed.append(pid)
            # a second into the load: the engine started by this sweep, by its pid
            asyncio.get_running_loop().call_later(1.0, os.kill, pid, sig)

    outcome = asyncio.run(
        run_sweep(
            prepare(spec),
            Store(tmp_path / "b.db"),
            SweepOptions(runs_dir=str(tmp_path / "runs")),
            on_event,
        )
    )
    assert killed
    return outcome.results


def test_a_crash_during_the_benchmark_is_a_death_with_its_signal(tmp_path: Path) -> None:
    [result] = _sweep_killing_once(tmp_path, signal.SIGSEGV)
    assert result.status is Status.FAILED
    assert result.failure is not None
    assert result.failure.stage is Stage.BENCHMARKED
    assert result.failure.category.value != "errors_under_load"
    assert "killed by SIGSEGV" in result.failure.evidence[0]
    assert "killed by SIGSEGV" in (result.failure.detail or "")


def test_an_engine_killed_from_outside_is_interrupted_then_retried(tmp_path: Path) -> None:
    first, retry = _sweep_killing_once(tmp_path, signal.SIGKILL)
    assert first.status is Status.INTERRUPTED
    assert first.failure is not None and first.failure.transient
    assert "killed by SIGKILL" in first.failure.evidence[0]
    assert retry.status is Status.PASSED  # the configuration itself was never at fault
