"""CPU hogs for tests and benches, and the measured cost of a step on this machine now.

``cpu_hogs(n)`` starts ``n`` busy-loop processes and, on exit, kills exactly those (by PID,
never by name) and reaps them. ``step_cost_s()`` times one small fixed operation (start a
Python interpreter and reap it): tests take their margins as a number of such steps, so a
margin grows with whatever else the machine is doing instead of being a fixed constant
that holds only on a quiet machine.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

# Pure interpreter work: no I/O, no allocation growth, nothing left behind.
_HOG_CODE = "while True:\n    pass\n"


@dataclass
class CpuHogs:
    """The hog processes one ``cpu_hogs`` block started."""

    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def alive(self) -> int:
        return sum(1 for p in self.procs if p.poll() is None)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()  # a process this object started, by its PID
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)


@contextlib.contextmanager
def cpu_hogs(n: int = 2, *, niceness: int = 0) -> Iterator[CpuHogs]:
    """``n`` processes that each keep one core busy for as long as the block runs.

    ``niceness`` is added to this process's own for each hog (a positive one needs no
    privilege): a bench can put its hogs at its client's priority, beneath its server's.
    """
    hogs = CpuHogs()
    try:
        for _ in range(n):
            proc = subprocess.Popen(
                [sys.executable, "-c", _HOG_CODE],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            hogs.procs.append(proc)
            if niceness:
                os.setpriority(
                    os.PRIO_PROCESS, proc.pid, os.getpriority(os.PRIO_PROCESS, 0) + niceness
                )
        yield hogs
    finally:
        hogs.stop()


@dataclass(frozen=True)
class Slack:
    """Margins for timing asserts in measured steps: ``slack(25)`` is 25 steps now."""

    step_s: float

    def __call__(self, steps: float) -> float:
        return steps * self.step_s


def step_cost_s(samples: int = 3) -> float:
    """Median wall time to start and reap a bare Python interpreter, now, on this machine."""
    times = []
    for _ in range(max(1, samples)):
        t0 = time.monotonic()
        subprocess.run(
            [sys.executable, "-I", "-c", "pass"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        times.append(time.monotonic() - t0)
    return statistics.median(times)
