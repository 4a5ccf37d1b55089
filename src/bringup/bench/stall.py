"""The stall watchdog: a stream that stops producing tokens ends now, not at the timeout.

A server can keep answering ``/health`` with 200 while a stream it started sends nothing
more (vLLM #51663: no token for hours). Waiting out a fixed request timeout, one request
after another, holds a sweep for many minutes with no verdict. The watchdog bounds the
silence instead: once a stream has produced its first body bytes, no new bytes for
``gap_s`` (``factor`` x the expected inter-token time, at least ``floor_s``) end the
request as a ``stall``; before the first bytes, ``first_s`` bounds the wait (it covers
queueing behind the other streams, so it scales with the concurrency).

Expected times come from the benchmark's own idle warm-up (:func:`expected_from`) or,
before any stream was timed, from the idle sentinel requests (:func:`from_requests`: a
whole request's time over its tokens overstates the inter-token time, so that watchdog is
looser); a watchdog is armed only from measured figures. A stall is a hang, not slowness: a server
that keeps producing tokens, however slowly against the reference, never trips it
(judging slow-but-progressing servers is the request timeout's business).
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bringup.bench.records import RequestRecord, now

FACTOR = 20.0  # x the expected inter-token time: far beyond scheduling jitter
FLOOR_S = 5.0  # a busy host pauses a healthy stream for a second or two, never this long


@dataclass(frozen=True)
class StallWatch:
    gap_s: float  # longest silence allowed once the stream has started
    first_s: float  # longest wait for the first body bytes

    def describe(self) -> str:
        return f"watchdog {self.gap_s:.1f}s between tokens, {self.first_s:.1f}s to the first"


class StallError(Exception):
    """Raised by :func:`await_progress`; ``silent_s`` is how long nothing arrived."""

    def __init__(self, silent_s: float, limit_s: float, started: bool) -> None:
        where = "mid-stream" if started else "before the first token"
        super().__init__(f"no token for {silent_s:.1f}s {where} (limit {limit_s:.1f}s)")
        self.silent_s = silent_s
        self.limit_s = limit_s


def expected_from(
    records: Sequence[RequestRecord],
    concurrency: int,
    factor: float = FACTOR,
    floor_s: float = FLOOR_S,
) -> StallWatch | None:
    """A watchdog from measured idle requests for a level at ``concurrency``; None if none."""
    good = [r for r in records if r.ok and r.event_times]
    itls = [x for r in good for x in r.itls()]
    if not good or not itls:
        return None
    itl = statistics.median(itls)
    ttft = statistics.median(r.ttft or 0.0 for r in good)
    e2e = statistics.median(r.e2e for r in good)
    gap = max(floor_s, factor * itl)
    # a new request may wait for every stream ahead of it to finish (one slot) first
    first = max(floor_s, factor * ttft, 2.0 * concurrency * e2e + gap)
    return StallWatch(gap_s=gap, first_s=first)


def from_requests(
    per_request_s: float,
    tokens: int,
    concurrency: int,
    factor: float = FACTOR,
    floor_s: float = FLOOR_S,
) -> StallWatch:
    """A watchdog from whole (not streamed) idle requests of ``tokens`` tokens each."""
    gap = max(floor_s, factor * per_request_s / max(tokens, 1))
    first = max(floor_s, factor * per_request_s, 2.0 * concurrency * per_request_s + gap)
    return StallWatch(gap_s=gap, first_s=first)


async def await_progress(
    done: asyncio.Future[int],
    reads: list[tuple[float, bytes]],
    watch: StallWatch,
) -> int:
    """``await done``, raising :class:`StallError` once ``reads`` stop growing too long."""
    started = now()
    while True:
        last = reads[-1][0] if reads else started
        limit = watch.gap_s if reads else watch.first_s
        left = last + limit - now()
        if left <= 0:
            raise StallError(now() - last, limit, bool(reads))
        try:
            return await asyncio.wait_for(asyncio.shield(done), left)
        except TimeoutError:
            continue
