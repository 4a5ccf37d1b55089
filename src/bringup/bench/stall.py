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

A silence past the limit is a stall only with evidence that the server is stuck, not slow
(a busier machine slows every step after the idle warm-up that set the limit):

- before the first token, tokens on another stream of this client during the silence mean
  the request is queued behind work the server is doing;
- mid-stream, tokens on another stream mean the server left this one behind: a stall;
- otherwise, where the engine's process is known (``pid``: the caller's, or the process
  listening on a loopback URL, see :func:`bringup.server.progress.listener_pid`), its
  process tree's CPU time and log growth over a short probe decide, as they do for a check
  request that got no answer (:class:`bringup.server.progress.Progress`). Where no
  process can be seen, silence on every stream is all there is to go on: a stall.

A stream whose engine is still working is given more time, probed again every limit, up
to ``slow_factor`` x the limit; then it ends as ``slow`` (:attr:`StallError.slow`), never as
a stall: an engine that computes but never answers would otherwise hold the benchmark
until the request timeout, and one that spins while hung looks the same from outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bringup.bench.records import RequestRecord, now
from bringup.server.progress import SAMPLE_WINDOW_S, Progress, snapshot

FACTOR = 20.0  # x the expected inter-token time: far beyond scheduling jitter
FLOOR_S = 5.0  # a busy host pauses a healthy stream for a second or two, never this long
# x the limit: how long a silent stream whose engine still works is waited for
SLOW_FACTOR = 10.0
WATCHDOG_ERRORS = ("stall", "slow")  # the record errors the watchdog ends a stream with

Reads = list[tuple[float, bytes]]


class _Streams:
    """The streams this process is waiting on under one watch: evidence for each other.

    Process-local: a watch sent to a client process arrives there with none.
    """

    def __init__(self) -> None:
        self.active: list[Reads] = []

    def __reduce__(self) -> tuple[type[_Streams], tuple[()]]:
        return (_Streams, ())

    def discard(self, reads: Reads) -> None:
        """Forget this stream; by identity: two streams' reads may be equal (both empty)."""
        self.active = [r for r in self.active if r is not reads]

    def others_since(self, mine: Reads, since: float) -> int:
        return sum(1 for r in self.active if r is not mine and r and r[-1][0] > since)


@dataclass(frozen=True)
class StallWatch:
    gap_s: float  # longest silence allowed once the stream has started
    first_s: float  # longest wait for the first body bytes
    # the engine's process and log, where known: probed before a silence is called a stall
    pid: int | None = None
    log: str | None = None
    slow_factor: float = SLOW_FACTOR
    streams: _Streams = field(default_factory=_Streams, compare=False, repr=False)

    def describe(self) -> str:
        return f"watchdog {self.gap_s:.1f}s between tokens, {self.first_s:.1f}s to the first"

    def span_s(self, tokens: int) -> float:
        """The longest a stream of ``tokens`` tokens may take while this watchdog never
        finds it silent: the first-token limit plus one gap per token. A deadline shorter
        than that ends a stream the watchdog would call healthy at every step."""
        return self.first_s + max(tokens, 1) * self.gap_s


class StallError(Exception):
    """Raised by :func:`await_progress`; ``silent_s`` is how long nothing arrived.

    ``slow`` holds the evidence that the engine kept working through the silence (the
    stream was ended as slow, not stalled); None for a stall.
    """

    def __init__(
        self, silent_s: float, limit_s: float, started: bool, slow: str | None = None
    ) -> None:
        where = "mid-stream" if started else "before the first token"
        why = f"; the engine kept working: {slow}" if slow else ""
        super().__init__(f"no token for {silent_s:.1f}s {where} (limit {limit_s:.1f}s){why}")
        self.silent_s = silent_s
        self.limit_s = limit_s
        self.slow = slow


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
    reads: Reads,
    watch: StallWatch,
) -> int:
    """``await done``, raising :class:`StallError` once ``reads`` stop growing too long."""
    started = now()
    grace_until = 0.0  # the engine was found working: the next look is not before this
    watch.streams.active.append(reads)
    try:
        while True:
            last = reads[-1][0] if reads else started
            limit = watch.gap_s if reads else watch.first_s
            left = max(last + limit, grace_until) - now()
            if left > 0:
                try:
                    return await asyncio.wait_for(asyncio.shield(done), left)
                except TimeoutError:
                    continue
            working = await _working(done, reads, watch, last)
            if done.done():
                return done.result()
            if reads and reads[-1][0] > last:
                continue  # a token came while the engine was probed: not silent after all
            silent = now() - last
            if working is None:
                raise StallError(silent, limit, bool(reads))
            if silent >= watch.slow_factor * limit:
                raise StallError(silent, limit, bool(reads), slow=working)
            grace_until = now() + limit
    finally:
        watch.streams.discard(reads)


async def _working(
    done: asyncio.Future[int], reads: Reads, watch: StallWatch, last: float
) -> str | None:
    """Evidence that the server is working through this stream's silence; None: stuck."""
    others = watch.streams.others_since(reads, last)
    if others:
        # queued behind the streams it serves; but a started stream the server no longer
        # advances while it advances others has been left behind
        return None if reads else f"{others} other stream(s) got tokens meanwhile"
    if watch.pid is None:
        return None
    log = Path(watch.log) if watch.log else None
    before = await asyncio.to_thread(snapshot, watch.pid, log)
    t0 = now()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(done), SAMPLE_WINDOW_S)
    after = await asyncio.to_thread(snapshot, watch.pid, log)
    if before is None or after is None:
        return None  # the engine is gone: not slow
    p = Progress(round(after[0] - before[0], 3), after[1] - before[1], round(now() - t0, 3))
    if not p.progressing:
        return None
    return f"{p.cpu_s:.2f} CPU-s and {p.log_bytes} log bytes over {p.window_s:.1f} s"
