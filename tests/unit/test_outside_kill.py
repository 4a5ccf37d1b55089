"""An engine stopped from outside bringup: an ``interrupted`` trial, never a verdict."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from bringup.engines.registry import get_engine
from bringup.plan import PlannedTrial
from bringup.server.outside import oom_kills, outside_signal
from bringup.spec import parse_spec
from bringup.trial import TrialContext, run_trial
from bringup.verdict import Status


def test_which_signal_deaths_are_someone_elses() -> None:
    assert outside_signal(-signal.SIGTERM, 3, 3) == "SIGTERM"
    assert outside_signal(-signal.SIGHUP, None, None) == "SIGHUP"
    assert outside_signal(-signal.SIGKILL, 3, 3) == "SIGKILL"  # the OOM killer did nothing
    assert outside_signal(-signal.SIGKILL, 3, 4) is None  # it did: an OOM verdict stands
    assert outside_signal(-signal.SIGKILL, None, None) is None  # nothing tells: it stands
    assert outside_signal(-signal.SIGSEGV, 3, 3) is None  # the engine's own crash
    assert outside_signal(1, 3, 3) is None and outside_signal(None, 3, 3) is None


def test_oom_kills_reads_the_kernels_counter(tmp_path: Path) -> None:
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 5\noom_kill 7\n")
    assert oom_kills(vmstat) == 7
    assert oom_kills(tmp_path / "absent") is None


# an "engine" that someone stops with SIGTERM while it starts up (here: itself, which
# bringup did not do either)
ENGINE = "import os, signal, time; time.sleep(0.3); os.kill(os.getpid(), signal.SIGTERM)"


def test_an_engine_stopped_from_outside_is_interrupted_and_retriable(tmp_path: Path) -> None:
    script = tmp_path / "engine.py"
    script.write_text(ENGINE)
    spec = parse_spec(
        f'[engine]\nname = "command"\ncommand = ["{sys.executable}", "{script}", "{{port}}"]\n'
        '[model]\npath = "m"\n[launch]\nstart_timeout_s = 60\n[checks]\naccuracy = false\n'
    )
    ctx = TrialContext(spec, get_engine("command"), tmp_path, benchmark=False)
    result = asyncio.run(run_trial(ctx, PlannedTrial({}), "r-t001")).result
    assert result.status is Status.INTERRUPTED, result
    assert result.failure is not None and result.failure.transient  # retried, never pruned on
    assert result.note is not None and "stopped by SIGTERM from outside bringup" in result.note
