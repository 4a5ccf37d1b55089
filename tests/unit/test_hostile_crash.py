"""An engine SIGKILLed during the benchmark: the verdict says the process died, and by
which signal, not that requests failed under load."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from bringup.spec import load_spec
from bringup.store import Store
from bringup.sweep import SweepEvent, SweepOptions, prepare, run_sweep
from bringup.testing.hostile import sim_spec
from bringup.verdict import Stage, Status


def test_sigkill_during_the_benchmark_is_a_death_with_its_signal(tmp_path: Path) -> None:
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
            asyncio.get_running_loop().call_later(1.0, os.kill, pid, signal.SIGKILL)

    outcome = asyncio.run(
        run_sweep(
            prepare(spec),
            Store(tmp_path / "b.db"),
            SweepOptions(runs_dir=str(tmp_path / "runs")),
            on_event,
        )
    )
    [result] = outcome.results
    assert killed and result.status is Status.FAILED
    assert result.failure is not None
    assert result.failure.stage is Stage.BENCHMARKED
    assert result.failure.category.value != "errors_under_load"
    assert "killed by SIGKILL" in result.failure.evidence[0]
    assert "killed by SIGKILL" in (result.failure.detail or "")
