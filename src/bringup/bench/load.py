"""Load shapes: closed loop at a concurrency, open loop at a rate on an absolute schedule.

Closed loop: ``concurrency`` workers each send their next request as soon as the previous
one ends, until ``requests`` have been issued or ``duration_s`` has passed (then in-flight
requests finish and count). Open loop: request ``i`` is due at ``t0 + a_i`` where the
arrival offsets ``a_i`` are drawn up front (Poisson or constant); the dispatcher sleeps to
each absolute due time, so a late wake-up never shifts later requests, and records how late
each request was dispatched. An optional cap on in-flight requests makes requests wait; that
wait is recorded as queue time, never hidden in TTFT.

Bodies are encoded up front; request ``i`` uses ``bodies[i % len(bodies)]``. A shard
``(k, n)`` keeps only requests with ``i % n == k``, so several processes can drive one level
from the same schedule (monotonic time is shared by every process of a host).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from bringup.bench.client import cancel_all, send
from bringup.bench.records import ParseQueue, RequestRecord, now
from bringup.bench.stall import WATCHDOG_ERRORS, StallWatch
from bringup.bench.stream_http import StreamPool


@dataclass
class LevelRun:
    """Raw outcome of one level (one repeat): records and an example message per error kind.

    ``stalled`` is set by the first request the stall watchdog ended: no new request is
    sent after it, since every one would wait out the watchdog in turn.
    """

    records: list[RequestRecord] = field(default_factory=list)
    error_examples: dict[str, str] = field(default_factory=dict)
    stalled: bool = False
    arrival_clock: str = "none"  # what stamped arrivals (StreamPool.arrival_clock)

    def merge(self, other: LevelRun) -> None:
        self.records.extend(other.records)
        self.stalled = self.stalled or other.stalled
        for k, v in other.error_examples.items():
            self.error_examples.setdefault(k, v)
        clocks = {self.arrival_clock, other.arrival_clock} - {"none"}
        self.arrival_clock = clocks.pop() if len(clocks) == 1 else "mixed" if clocks else "none"


def _share(total: int, shard: tuple[int, int]) -> int:
    """Shard ``(k, n)``'s part of ``total``: the first ``total % n`` shards take one more."""
    k, n = shard
    return total // n + (1 if k < total % n else 0)


def arrival_offsets(
    rate: float, arrival: str, *, count: int | None, duration_s: float | None, seed: int
) -> list[float]:
    """Due times (s after the start) of an open-loop level, bounded by count or duration."""
    if count is None and duration_s is None:
        raise ValueError("an open-loop level needs a request count or a duration")
    rng = random.Random(seed)
    out: list[float] = []
    t = 0.0
    while True:
        if count is not None and len(out) >= count:
            break
        if duration_s is not None and t >= duration_s:
            break
        out.append(t)
        t += rng.expovariate(rate) if arrival == "poisson" else 1.0 / rate
    return out


@dataclass
class _Level:
    """What one level's requests share, and its teardown in one place.

    ``async with _Level(...) as lv``: on exit (a normal end, an error, a cancel) every
    request task still running is cancelled and awaited, then the parser is closed.
    """

    pool: StreamPool
    bodies: Sequence[bytes]
    timeout_s: float
    watch: StallWatch | None
    run: LevelRun = field(default_factory=LevelRun)
    parser: ParseQueue = field(default_factory=ParseQueue)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def __aenter__(self) -> _Level:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await cancel_all(self.tasks)
        await self.parser.close()

    async def one(self, i: int, rec: RequestRecord, cap: asyncio.Semaphore | None) -> None:
        """Send request ``i`` (after a slot of ``cap``, if any) and keep its record."""
        body, run = self.bodies[i % len(self.bodies)], self.run
        if cap is None:
            detail = await send(self.pool, body, rec, self.timeout_s, self.parser, self.watch)
        else:
            async with cap:
                if run.stalled:
                    return
                detail = await send(self.pool, body, rec, self.timeout_s, self.parser, self.watch)
        run.stalled = run.stalled or rec.error in WATCHDOG_ERRORS
        if rec.error and detail:
            run.error_examples.setdefault(rec.error, detail)
        run.records.append(rec)

    async def all_done(self) -> LevelRun:
        await asyncio.gather(*self.tasks)
        return self.run


async def closed_loop(
    pool: StreamPool,
    bodies: Sequence[bytes],
    *,
    concurrency: int,
    requests: int | None,
    duration_s: float | None,
    timeout_s: float = 300.0,
    shard: tuple[int, int] = (0, 1),
    watch: StallWatch | None = None,
) -> LevelRun:
    """``concurrency`` workers (this shard's share), bounded by ``requests`` or ``duration_s``."""
    k, n = shard
    workers = _share(concurrency, shard)
    limit = None if requests is None else _share(requests, shard)
    deadline = None if duration_s is None else now() + duration_s
    counter = iter(range(k, 1 << 62, n))
    issued = 0

    async with _Level(pool, bodies, timeout_s, watch) as lv:

        async def worker() -> None:
            nonlocal issued
            while True:
                if limit is not None and issued >= limit:
                    return
                if deadline is not None and now() >= deadline:
                    return
                if lv.run.stalled:
                    return
                issued += 1
                i = next(counter)
                rec = RequestRecord(index=i, scheduled=now())
                rec.dispatched = rec.scheduled
                await lv.one(i, rec, None)

        lv.tasks.extend(asyncio.create_task(worker()) for _ in range(workers))
        return await lv.all_done()


async def open_loop(
    pool: StreamPool,
    bodies: Sequence[bytes],
    *,
    t0: float,
    offsets: Sequence[float],
    max_concurrency: int | None,
    timeout_s: float = 300.0,
    shard: tuple[int, int] = (0, 1),
    watch: StallWatch | None = None,
) -> LevelRun:
    """Dispatch request ``i`` at ``t0 + offsets[i]`` (this shard's ``i``), capped if asked."""
    k, n = shard
    cap = None
    if max_concurrency is not None:
        cap = asyncio.Semaphore(max(1, _share(max_concurrency, shard)))
    async with _Level(pool, bodies, timeout_s, watch) as lv:
        for i in range(k, len(offsets), n):
            due = t0 + offsets[i]
            delay = due - now()
            if delay > 0:
                await asyncio.sleep(delay)
            if lv.run.stalled:
                break
            rec = RequestRecord(index=i, scheduled=due)
            rec.dispatched = now()
            lv.tasks.append(asyncio.create_task(lv.one(i, rec, cap)))
        return await lv.all_done()


async def warm_up(
    pool: StreamPool,
    bodies: Sequence[bytes],
    count: int,
    concurrency: int,
    timeout_s: float,
    watch: StallWatch | None = None,
) -> LevelRun:
    """``count`` requests kept out of every figure (caches, graphs, connections).

    Their records come back only to time the server at idle for the stall watchdog.
    """
    if count <= 0:
        return LevelRun()
    return await closed_loop(
        pool,
        bodies,
        timeout_s=timeout_s,
        concurrency=max(1, min(concurrency, count)),
        requests=count,
        duration_s=None,
        watch=watch,
    )
