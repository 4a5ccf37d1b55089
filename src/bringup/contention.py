"""How much of the machine was left to a trial while it ran.

A :class:`ContentionMeter` samples /proc (through psutil) at the start and end of a window:
the machine's busy CPU time and steal, and the CPU time of bringup and everything it
started (the engine, load-generator workers; reaped children included). What the machine
spent that was not ours is other processes' work. The result, :class:`Contention`, says
which share of the machine others took, which share the hypervisor stole, the load
average, and so the share left to us.

A benchmark taken while others took at least ``CONTENDED_SHARE`` of the CPU is flagged:
its speed figures are lower bounds of what the configuration does on a quiet machine.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psutil
from pydantic import BaseModel

# Others took a fifth of the machine: on a CPU-bound engine that is visible in tok/s.
CONTENDED_SHARE = 0.2


class Contention(BaseModel):
    """One measured window. Shares are fractions of the whole machine (all cores)."""

    window: str  # "trial" | "benchmark"
    wall_s: float
    cores: int
    others_cpu_s: float
    steal_s: float
    ours_cpu_s: float
    load1: float  # the 1-minute load average at the end of the window

    @property
    def capacity_s(self) -> float:
        return max(self.wall_s * self.cores, 1e-9)

    @property
    def others_share(self) -> float:
        return min(1.0, self.others_cpu_s / self.capacity_s)

    @property
    def steal_share(self) -> float:
        return min(1.0, self.steal_s / self.capacity_s)

    @property
    def taken_share(self) -> float:
        """What others and the hypervisor took: the part of the machine not left to us."""
        return min(1.0, self.others_share + self.steal_share)

    @property
    def left_share(self) -> float:
        return 1.0 - self.taken_share

    @property
    def contended(self) -> bool:
        return self.taken_share >= CONTENDED_SHARE

    def describe(self) -> str:
        steal = f", steal {self.steal_share:.0%}" if self.steal_s > 0.05 * self.wall_s else ""
        return (
            f"{self.left_share:.0%} of {self.cores} cores left to bringup over "
            f"{self.wall_s:.0f} s (others {self.others_share:.0%}{steal}, load {self.load1:.1f})"
        )


def _busy_and_steal() -> tuple[float, float]:
    t = psutil.cpu_times()
    steal = float(getattr(t, "steal", 0.0))
    idle = t.idle + float(getattr(t, "iowait", 0.0))
    # guest time is already inside user on Linux; steal is not CPU this machine ran
    total = sum(t) - float(getattr(t, "guest", 0.0)) - float(getattr(t, "guest_nice", 0.0))
    return total - idle - steal, steal


def _ours() -> float:
    """CPU seconds of this process and its descendants, live or reaped."""
    me = psutil.Process(os.getpid())
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # gone between listing and reading: its parent reaps its times
        total += t.user + t.system + t.children_user + t.children_system
    return total


@dataclass
class ContentionMeter:
    """Started at the beginning of a window; ``stop()`` gives the window's contention."""

    window: str
    t0: float
    busy0: float
    steal0: float
    ours0: float

    @classmethod
    def start(cls, window: str) -> ContentionMeter:
        busy, steal = _busy_and_steal()
        return cls(window, time.monotonic(), busy, steal, _ours())

    def stop(self) -> Contention:
        busy, steal = _busy_and_steal()
        ours = _ours() - self.ours0
        wall = time.monotonic() - self.t0
        return Contention(
            window=self.window,
            wall_s=round(wall, 3),
            cores=psutil.cpu_count() or 1,
            others_cpu_s=round(max(0.0, busy - self.busy0 - ours), 3),
            steal_s=round(max(0.0, steal - self.steal0), 3),
            ours_cpu_s=round(max(0.0, ours), 3),
            load1=round(os.getloadavg()[0], 2),
        )


def benchmark_contention(contention: dict[str, Contention]) -> Contention | None:
    """The window the speed figures came from: the benchmark's, else the whole trial's."""
    return contention.get("benchmark") or contention.get("trial")


def from_stored(stored: dict[str, object] | None) -> dict[str, Contention]:
    """A trial row's ``contention`` (JSON) as models; rows from before it was measured: {}."""
    return {k: Contention.model_validate(v) for k, v in (stored or {}).items()}


def cpu_left_cell(contention: dict[str, Contention]) -> str:
    """``62%`` of the machine left to the benchmark (``62%!`` when contended), or ``-``."""
    c = benchmark_contention(contention)
    if c is None:
        return "-"
    return f"{c.left_share:.0%}" + ("!" if c.contended else "")


def contention_warnings(trials: list[tuple[str, dict[str, Contention]]]) -> list[str]:
    """One line per benchmark taken under contention: its figures understate the config."""
    out = []
    for name, contention in trials:
        c = contention.get("benchmark")
        if c is not None and c.contended:
            out.append(
                f"{name}: benchmark ran under contention, {c.describe()}; "
                "its speed is a lower bound"
            )
    return out
