"""The CPU-hog helper: starts what it says, stops exactly what it started."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import psutil

from bringup.testing.hogs import Slack, cpu_hogs, step_cost_s


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(done: Callable[[], bool]) -> None:
    """Until ``done`` holds or a minute has passed: waited for, not timed (the assert that
    follows says whether it came)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not done():
        time.sleep(0.02)


def test_hogs_burn_cpu_and_are_gone_after_the_block() -> None:
    with cpu_hogs(2) as hogs:
        pids = hogs.pids
        assert len(pids) == 2 and hogs.alive() == 2
        procs = [psutil.Process(p) for p in pids]
        # a child's command line reads empty until its exec has set it up (the parent may
        # run on before that on a loaded machine)
        _wait_for(lambda: all(p.cmdline() for p in procs))
        assert all(p.cmdline()[-1].startswith("while True") for p in procs)
        # each one is burning CPU: its own CPU time grows
        _wait_for(lambda: min(sum(p.cpu_times()[:2]) for p in procs) >= 0.05)
        assert min(sum(p.cpu_times()[:2]) for p in procs) >= 0.05
    assert not any(_running(p) for p in pids)


def test_step_cost_is_measured_and_slack_scales_with_it() -> None:
    step = step_cost_s(samples=1)
    assert 0 < step < 60
    assert Slack(step)(10) == 10 * step


def test_hogs_can_run_beneath_the_callers_priority() -> None:
    with cpu_hogs(1, niceness=5) as hogs:
        assert psutil.Process(hogs.pids[0]).nice() == os.nice(0) + 5
