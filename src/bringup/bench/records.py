"""One request's timing record, and the SSE parse that fills it after the stream ends.

The hot path only appends ``(arrival time, raw bytes)`` per socket read (the kernel's
receive time where the platform offers it, see :mod:`bringup.bench.stream_http`);
:func:`parse_stream` runs once the response is complete. An event is timed by the read that
completed it, so events that arrived in one read share its time, that of the read's last
segment: they are *coalesced*. ``event_reads`` keeps which read brought each event, and no
inter-token latency is ever taken between two events of one read as if they were apart:
the tokens of a coalesced read share the gap since the previous read.

The kernel keeps one stamp per queued segment run: when a segment arrives while an earlier
one is still unread, Linux merges them (``tcp_try_coalesce``) and the merged data carries the
*newest* segment's stamp. So a first token read together with any later bytes may have
arrived earlier than its stamp says; nothing left in user space can tell how much earlier.
Such a record's TTFT is an upper bound (``ttft_upper_bound``), counted, never corrected by
a guess.

A request's TTFT and E2E run from ``left``, when its last byte was handed to the kernel;
``left - sent`` is the client's own delay in getting it out (``client_delay``).

Token attribution ("spread"): the server's ``usage.completion_tokens`` is the truth for how
many tokens a request produced. When it exceeds the number of content-bearing events, the
excess is distributed over the events in proportion to their text length (each event
carries at least one token). The gap before an event carrying ``k`` tokens then yields
``k`` inter-token latencies of ``gap / k`` each: ITL is per token, not per chunk.

All times are ``time.monotonic()`` seconds (CLOCK_MONOTONIC, one clock for every process of
the host), so a server stamp ``t_send`` on an event (see ``bringup.testing.fakeserver``) can be
subtracted from the arrival time to give the client's lag, and a ``t_recv`` stamp (when the
server got the request) is kept as ``server_received``.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson

now = time.monotonic


@dataclass(slots=True)
class RequestRecord:
    """Times (monotonic s) and counts of one request; ``error`` is a short kind or None."""

    index: int
    scheduled: float  # when it was due (open loop) or issued (closed loop)
    dispatched: float = 0.0  # when the client got to it: lateness = dispatched - scheduled
    sent: float = 0.0  # when it got a slot and the POST began: queue = sent - dispatched
    left: float = 0.0  # when its last byte was handed to the kernel; 0: it never left
    end: float = 0.0
    error: str | None = None
    status: int = 0
    event_times: list[float] = field(default_factory=list)  # content-bearing events
    event_tokens: list[int] = field(default_factory=list)  # tokens attributed to each
    event_reads: list[int] = field(default_factory=list)  # which arrival (read) brought each
    output_tokens: int = 0
    prompt_tokens: int | None = None
    usage_reported: bool = False
    text: str = ""
    client_lag: list[float] = field(default_factory=list)  # arrival - server stamp, s
    server_received: float | None = None  # the server's stamp of the request's arrival
    finish_reason: str | None = None
    retries: int = 0  # re-sent once after the server had closed the pooled connection
    # the first token's read also brought later bytes: its stamp may be theirs (see above)
    ttft_upper_bound: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def start(self) -> float:
        """Where TTFT and E2E start: when the request left (when it set out, if unknown)."""
        return self.left or self.sent

    @property
    def client_delay(self) -> float | None:
        """How long the client took from setting out to handing the last byte to the kernel."""
        return self.left - self.sent if self.left else None

    @property
    def ttft(self) -> float | None:
        return self.event_times[0] - self.start if self.event_times else None

    @property
    def e2e(self) -> float:
        return self.end - self.start

    def coalesced(self) -> int:
        """Events that arrived in the same read as the event before them."""
        reads = self.event_reads
        return sum(1 for i in range(1, len(reads)) if reads[i] == reads[i - 1])

    def itls(self) -> list[float]:
        """Inter-token latencies, one per token after the first read's (spread attribution).

        The tokens of all events of one read share the gap since the previous read: they
        arrived together, so no latency is taken between them.
        """
        out: list[float] = []
        times, toks, reads = self.event_times, self.event_tokens, self.event_reads
        n = len(times)
        if len(reads) != n:  # built without a parse: every event its own read
            reads = list(range(n))
        i = 1
        while i < n and reads[i] == reads[0]:
            i += 1
        while i < n:
            j, k = i, 0
            while j < n and reads[j] == reads[i]:
                k += toks[j]
                j += 1
            gap = (times[i] - times[i - 1]) / k
            out.extend([gap] * k)
            i = j
        return out

    def tpot(self) -> float | None:
        """Time per output token after the first: (last event - first event) / (tokens - 1)."""
        if len(self.event_times) < 2 or self.output_tokens < 2:
            return None
        return (self.event_times[-1] - self.event_times[0]) / (self.output_tokens - 1)

    def decode_tok_s(self) -> float | None:
        tpot = self.tpot()
        return 1.0 / tpot if tpot else None


def _spread(total: int, lengths: list[int]) -> list[int]:
    """``total`` tokens over events, at least one each, the excess by text length."""
    n = len(lengths)
    if n == 0:
        return []
    if total <= n:
        return [1] * n
    extra = total - n
    weights = lengths if sum(lengths) else [1] * n
    weight = sum(weights)
    shares = [extra * w / weight for w in weights]
    ks = [1 + int(s) for s in shares]
    rest = total - sum(ks)
    # largest remainders take the leftover tokens
    order = sorted(range(n), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in order[:rest]:
        ks[i] += 1
    return ks


def _text_of(choice: dict[str, Any]) -> str:
    text = choice.get("text")
    if text is None:
        delta = choice.get("delta") or {}
        text = delta.get("content") or delta.get("reasoning_content") or ""
    return text if isinstance(text, str) else ""


def _more_in_read(arrival: list[int], ends: list[int], piece: int, upto: int) -> bool:
    """Whether the socket read that brought body piece ``piece`` held bytes past ``upto``."""
    last = piece
    while last + 1 < len(arrival) and arrival[last + 1] == arrival[piece]:
        last += 1
    return ends[last] > upto


def parse_stream(rec: RequestRecord, reads: list[tuple[float, bytes]]) -> None:
    """Fill ``rec`` from the raw reads of one SSE response (sets ``error`` when it is bad)."""
    ends: list[int] = []
    parts: list[bytes] = []
    total = 0
    for _, chunk in reads:
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n")
        parts.append(chunk)
        total += len(chunk)
        ends.append(total)
    buf = b"".join(parts)
    times = [t for t, _ in reads]
    # body pieces of one socket read share its stamp: number the distinct arrivals
    arrival = [0] * len(times)
    for i in range(1, len(times)):
        arrival[i] = arrival[i - 1] + (times[i] != times[i - 1])
    texts: list[str] = []
    lengths: list[int] = []
    done = False
    usage_tokens: int | None = None
    pos = 0
    while True:
        stop = buf.find(b"\n\n", pos)
        if stop < 0:
            block = buf[pos:].strip()
            if not block:
                break
            stop = len(buf) - 2  # a last event without its blank line
        block = buf[pos:stop]
        pos = stop + 2
        # the read that brought the event's last byte is when the client could see it
        read = min(bisect_left(ends, stop + 2), len(times) - 1)
        t = times[read]
        for line in block.split(b"\n"):
            if not line.startswith(b"data:"):
                continue  # comments (keep-alives), event:, id:
            payload = line[5:].strip()
            if payload == b"[DONE]":
                done = True
                continue
            try:
                obj = orjson.loads(payload)
            except orjson.JSONDecodeError:
                rec.error = rec.error or "bad_event"
                continue
            if not isinstance(obj, dict):
                continue
            if obj.get("error"):
                rec.error = rec.error or "stream_error"
                continue
            stamp = obj.get("t_send")
            if isinstance(stamp, float):
                rec.client_lag.append(t - stamp)
            received = obj.get("t_recv")
            if isinstance(received, float) and rec.server_received is None:
                rec.server_received = received
            text = ""
            for choice in obj.get("choices") or ():
                text += _text_of(choice)
                reason = choice.get("finish_reason")
                if reason:
                    rec.finish_reason = reason
                    done = True
            if text:
                if not rec.event_times:
                    rec.ttft_upper_bound = _more_in_read(arrival, ends, read, stop + 2)
                rec.event_times.append(t)
                rec.event_reads.append(arrival[read])
                texts.append(text)
                lengths.append(len(text))
            usage = obj.get("usage")
            if isinstance(usage, dict):
                if isinstance(usage.get("completion_tokens"), int):
                    usage_tokens = usage["completion_tokens"]
                if isinstance(usage.get("prompt_tokens"), int):
                    rec.prompt_tokens = usage["prompt_tokens"]
        if pos >= len(buf):
            break
    rec.text = "".join(texts)
    rec.usage_reported = usage_tokens is not None
    rec.output_tokens = usage_tokens if usage_tokens is not None else len(texts)
    rec.event_tokens = _spread(rec.output_tokens, lengths)
    if rec.error is None:
        if not done:
            rec.error = "incomplete"
        elif not rec.event_times:
            rec.error = "no_tokens"


class ParseQueue:
    """Holds finished streams' raw reads and parses them once the window is over.

    Parsing an SSE stream costs a few µs per event; done while other streams are still
    arriving, every read that lands during a parse is stamped late by it (measured: lag p99
    3.0 ms with parsing between callbacks against 1.3 ms with parsing deferred, at 256
    streams x 50 events/s). So records wait, raw, until :meth:`close`. Only when the held
    bytes pass ``budget_bytes`` are the oldest parsed in the background, one per loop turn,
    until half the budget is left: memory stays bounded on long windows.
    """

    _PER_READ = 100  # bytes a (stamp, bytes) tuple costs beyond its payload

    def __init__(self, budget_bytes: int = 256 << 20) -> None:
        self.budget = budget_bytes
        self.held = 0
        self._pending: deque[tuple[RequestRecord, list[tuple[float, bytes]], int]] = deque()
        self._task: asyncio.Task[None] | None = None

    def submit(self, rec: RequestRecord, reads: list[tuple[float, bytes]]) -> None:
        size = sum(len(b) for _, b in reads) + self._PER_READ * len(reads)
        self._pending.append((rec, reads, size))
        self.held += size
        if self.held > self.budget and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain())

    def _parse_oldest(self) -> None:
        rec, reads, size = self._pending.popleft()
        self.held -= size
        parse_stream(rec, reads)

    async def _drain(self) -> None:
        try:
            while self._pending and self.held > self.budget // 2:
                self._parse_oldest()
                await asyncio.sleep(0)
        finally:
            self._task = None

    async def close(self) -> None:
        """Parse every record still held."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        while self._pending:
            self._parse_oldest()
