"""Watch a deployed server: a real generation at an interval, not only ``/health``.

``watch_server(url, options)`` runs :func:`bringup.checks.probe.run_probe` (health, one
known answer, the garbage detectors) every ``interval_s`` seconds and hands each verdict to
``on_verdict``. After ``failures`` consecutive failed probes it calls ``on_trip``; when
that returns False (or there is none) the watch ends with ``tripped=True``, when it returns
True (e.g. a restart command ran) the count starts again and the watch goes on. A server
whose ``/health`` answers 200 while its answers are garbage fails every probe.

Stall watchdog: once probes have passed, one probe may take at most ``stall_factor`` x the
median time of the passing ones (at least ``stall_floor_s``, at most ``timeout_s``). A
server whose ``/health`` answers 200 but which produces nothing within that is a ``hang``
verdict carrying the silence's length (``ProbeResult.hang_s``), well before a fixed timeout.

A slow probe (no answer in time while the server's process kept computing, see
:mod:`bringup.checks.probe`) is not a failed one: a busy server is not restarted, since a
restart would kill the work it is doing. It is counted apart (``WatchOutcome.slow``), and
it neither adds to the run of consecutive failures nor ends it.

Recheck: with ``recheck`` (a coroutine that re-runs the stored winner, see
:mod:`bringup.recheck`, and returns a one-line verdict and whether it regressed) and
``recheck_every_s``, the watch runs it on that schedule between probes; a regression
trips the watch like failed probes do.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bringup.checks.probe import ProbeResult, run_probe

ProbeFn = Callable[[str], Awaitable[ProbeResult]]
RecheckFn = Callable[[], Awaitable[tuple[str, bool]]]  # (verdict line, regressed)


@dataclass
class WatchOptions:
    interval_s: float = 30.0
    failures: int = 3  # consecutive failed probes that trip the watch
    timeout_s: float = 10.0  # for one probe
    api_key: str | None = None
    health_path: str = "/health"
    model: str | None = None
    max_probes: int | None = None  # stop after this many probes (None: until tripped)
    stall_factor: float = 20.0
    recheck_every_s: float | None = None
    stall_floor_s: float = 5.0


@dataclass
class WatchEvent:
    at: float  # wall-clock time of the probe's end
    result: ProbeResult
    consecutive_failures: int


@dataclass
class WatchOutcome:
    probes: int = 0
    failed: int = 0  # failed probes (slow ones are not among them)
    slow: int = 0  # probes that got no answer in time while the server kept computing
    tripped: bool = False
    trips: int = 0
    rechecks: list[tuple[float, str, bool]] = field(default_factory=list)  # (at, line, bad)
    last: ProbeResult | None = None
    events: list[WatchEvent] = field(default_factory=list)


def run_command(argv: list[str], timeout_s: float = 300.0) -> int:
    """Run the on-failure command (argv, no shell); its exit code, 127 when it cannot start."""
    try:
        return subprocess.run(argv, check=False, timeout=timeout_s).returncode
    except FileNotFoundError:
        return 127
    except subprocess.TimeoutExpired:
        return 124


async def watch_server(
    url: str,
    options: WatchOptions,
    *,
    on_verdict: Callable[[WatchEvent], None] = lambda e: None,
    on_trip: Callable[[WatchEvent], bool] | None = None,
    probe: ProbeFn | None = None,
    keep_events: int = 100,
    recheck: RecheckFn | None = None,
) -> WatchOutcome:
    """Probe until ``failures`` consecutive failures trip the watch (or ``max_probes``)."""

    passing: list[float] = []  # elapsed times of recent passing probes

    def probe_limit() -> float:
        if not passing:
            return options.timeout_s
        watchdog = max(options.stall_floor_s, options.stall_factor * statistics.median(passing))
        return min(options.timeout_s, watchdog)

    async def default_probe(u: str) -> ProbeResult:
        return await run_probe(
            u,
            timeout_s=probe_limit(),
            api_key=options.api_key,
            health_path=options.health_path,
            model=options.model,
        )

    do_probe = probe or default_probe
    out = WatchOutcome()
    streak = 0
    last_recheck = time.monotonic()
    while options.max_probes is None or out.probes < options.max_probes:
        started = time.monotonic()
        every = options.recheck_every_s
        if recheck is not None and every is not None and started - last_recheck >= every:
            line, regressed = await recheck()
            last_recheck = time.monotonic()
            out.rechecks.append((time.time(), line, regressed))
            if regressed:
                out.trips += 1
                out.tripped = True
                return out
        result = await do_probe(url)
        out.probes += 1
        out.last = result
        if result.passed:
            passing[:] = [*passing[-19:], result.elapsed_s]
            streak = 0
        elif result.slow_s is not None:
            out.slow += 1  # working, only slowly: no restart, and no pass either
        else:
            streak += 1
            out.failed += 1
        event = WatchEvent(time.time(), result, streak)
        out.events = [*out.events[-(keep_events - 1) :], event] if keep_events > 0 else []
        on_verdict(event)
        if streak >= options.failures:
            out.trips += 1
            if on_trip is None or not on_trip(event):
                out.tripped = True
                return out
            streak = 0
        if options.max_probes is not None and out.probes >= options.max_probes:
            break
        await asyncio.sleep(max(0.0, options.interval_s - (time.monotonic() - started)))
    return out
