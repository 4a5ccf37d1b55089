"""Slow is not dead: judge a request that got no answer by what the engine did meanwhile.

- the process is gone: its exit and log decide (the classifier), as for any exit;
- the server answered 5xx: ``runtime_crash``; it failed the request itself;
- timed out, or the connection dropped, while the process lives: its progress is sampled
  over a short window (CPU time its process tree used, log growth). Progress is
  ``slow_response``, none is ``stalled``. Both are transient: the sweep retries the
  configuration once and they never prune others (a loaded machine is not a property of
  the configuration; and an engine drops a request whose client left, so idle afterwards
  proves nothing).

A stream the benchmark's stall watchdog ended is judged the same way, over the silence
itself: :class:`ProgressMeter` samples the engine's tree CPU time and log size once a second
while the benchmark runs, and :meth:`ProgressMeter.over` says what the engine did in the
last seconds before the watchdog fired. Work meanwhile (a loaded machine, a queue) is
``slow_response``; none, seen while the request was still open, is the hang the watchdog
is for. :func:`judge_silence` is that one rule, for every place a silence is seen.

How long to wait comes from measured speed, not a constant: ``request_timeout_s`` is the
tokens a check asks for over the decode rate measured on the reference, times a margin.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import psutil

from bringup.errors import RequestError
from bringup.verdict import Category

# A check request waits this many times what the reference's measured speed needs.
TIMEOUT_MARGIN = 10.0
# Nothing measured yet (the reference's own first look), or a rate measured as 0.
FIRST_LOOK_TIMEOUT_S = 120.0
# Below this a request cannot carry its HTTP round trip and prompt on a loaded machine.
MIN_TIMEOUT_S = 10.0
# A process tree using a twentieth of a core is computing, not waiting on a lock.
PROGRESS_CPU_SHARE = 0.05
SAMPLE_WINDOW_S = 2.0


def request_timeout_s(max_tokens: int, decode_tok_s: float | None) -> float:
    """Per-request timeout for ``max_tokens`` at the measured decode rate (tokens/s)."""
    if not decode_tok_s or decode_tok_s <= 0:
        return FIRST_LOOK_TIMEOUT_S
    return max(MIN_TIMEOUT_S, TIMEOUT_MARGIN * max_tokens / decode_tok_s)


def request_failure_kind(exc: BaseException) -> str:
    """``timeout`` | ``connection`` | ``server_error`` | ``other`` for a failed request.

    Decided by the exception's type and the HTTP status it carries, never by its message.
    """
    if isinstance(exc, RequestError):
        return exc.kind if exc.kind in ("timeout", "connection", "server_error") else "other"
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, aiohttp.ClientResponseError):
        return "server_error" if exc.status >= 500 else "other"
    if isinstance(exc, aiohttp.ClientConnectionError | ConnectionError):
        return "connection"
    return "other"


@dataclass
class Progress:
    cpu_s: float
    log_bytes: int
    window_s: float
    evidence: list[str] = field(default_factory=list)

    @property
    def progressing(self) -> bool:
        return self.log_bytes > 0 or self.cpu_s >= PROGRESS_CPU_SHARE * self.window_s


def _tree_cpu_s(pid: int) -> float | None:
    """CPU seconds the process tree from ``pid`` has used; None when ``pid`` is gone."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return None
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        total += t.user + t.system
    return total


def _size(path: Path | None) -> int:
    if path is None:
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0


def snapshot(pid: int, log_path: Path | None) -> tuple[float, int] | None:
    """(tree CPU-s, log bytes) now; None when the process is gone. Walks /proc: blocking."""
    cpu = _tree_cpu_s(pid)
    return None if cpu is None else (cpu, _size(log_path))


def listener_pid(base_url: str) -> int | None:
    """The process listening on a loopback ``base_url``'s port, where it can be seen.

    None for a server on another host, one this process serves itself (its CPU time says
    nothing about the server), or a listener this user may not look at. Blocking: it reads
    every socket of the host.
    """
    url = urlsplit(base_url)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        if not ipaddress.ip_address(socket.gethostbyname(url.hostname or "")).is_loopback:
            return None
        conns = psutil.net_connections(kind="tcp")
    except (OSError, ValueError, psutil.Error):
        return None
    for c in conns:
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
            return None if c.pid == os.getpid() else c.pid
    return None


def _cpu_or_zero(pid: int) -> float:
    return _tree_cpu_s(pid) or 0.0


async def sample_progress(pid: int, log_path: Path, window_s: float = SAMPLE_WINDOW_S) -> Progress:
    """What the engine's process tree and log did over ``window_s`` seconds from now."""
    cpu0 = await asyncio.to_thread(_cpu_or_zero, pid)
    size0, t0 = _size(log_path), time.monotonic()
    await asyncio.sleep(window_s)
    cpu = await asyncio.to_thread(_cpu_or_zero, pid) - cpu0
    grown = _size(log_path) - size0
    wall = time.monotonic() - t0
    p = Progress(round(cpu, 3), grown, round(wall, 3))
    p.evidence.append(
        f"over {wall:.1f} s after the failure the engine used {cpu:.2f} CPU-s "
        f"and wrote {grown} log bytes"
    )
    return p


class ProgressMeter:
    """The engine's tree CPU time and log size, sampled every ``period_s`` in the background.

    ``log_path`` None: a server whose log is not ours to read (``bringup probe``); its CPU
    time is all the evidence.
    """

    def __init__(self, pid: int, log_path: Path | None, period_s: float = 1.0) -> None:
        self.pid, self.log_path, self.period_s = pid, log_path, period_s
        self.samples: list[tuple[float, float, int]] = []  # (monotonic, CPU-s, log bytes)
        self._task: asyncio.Task[None] | None = None

    def _read(self) -> tuple[float, float, int]:
        return (time.monotonic(), _cpu_or_zero(self.pid), _size(self.log_path))

    def sample(self) -> None:
        self._keep(self._read())

    def _keep(self, s: tuple[float, float, int]) -> None:
        self.samples.append(s)
        del self.samples[:-600]  # ten minutes at one a second is plenty to look back on

    async def _loop(self) -> None:
        # walking /proc takes milliseconds on a busy host: on a thread, so it never delays
        # the benchmark's arrival timestamps on this loop
        while True:
            self._keep(await asyncio.to_thread(self._read))
            await asyncio.sleep(self.period_s)

    def start(self) -> ProgressMeter:
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def over(self, window_s: float, end_t: float | None = None) -> Progress:
        """What the engine did over (about) ``window_s`` seconds up to ``end_t`` (now)."""
        self.sample()
        last = end_t if end_t is not None else self.samples[-1][0]
        upto = [s for s in self.samples if s[0] <= last + self.period_s / 2] or self.samples
        end = upto[-1]
        start = next((s for s in reversed(upto) if end[0] - s[0] >= window_s), upto[0])
        wall = end[0] - start[0]
        p = Progress(round(end[1] - start[1], 3), end[2] - start[2], round(wall, 3))
        p.evidence.append(
            f"over {wall:.1f} s at the end of the silence the engine used {p.cpu_s:.2f} "
            f"CPU-s and wrote {p.log_bytes} log bytes"
        )
        return p


def judge_silence(
    *, working: bool, watched: bool, health_status: int | None = 200
) -> tuple[Category, bool, str]:
    """The one verdict for a live engine that left a request without (all of) its answer:
    category, transient, and one sentence. Evidence decides, wherever it was seen (the
    correct stage's streamed check, the benchmark, a check request that timed out):

    - ``/health`` not answering 200: ``runtime_crash``;
    - the engine visibly working (``working``: CPU used, log grown, other streams served)
      is slow, ``slow_response``: transient, it never prunes;
    - idle while the request was still open (``watched``: the stall watchdog looked during
      the silence) is a hang of this configuration, ``startup_timeout_or_hang``: nothing
      else was in the way, so a retry reproduces it, and it prunes;
    - idle only when looked at after the request was given up is ``stalled``, transient:
      an engine drops the work of a request whose client left (llama-server cancels it),
      so an idle engine then proves nothing about the request.
    """
    if health_status is not None and health_status != 200:
        return Category.RUNTIME_CRASH, False, "the engine stopped answering /health with 200"
    if working:
        return (
            Category.SLOW_RESPONSE,
            True,
            "the engine is alive and still working, only slower than the request's limit",
        )
    if watched:
        return (
            Category.STARTUP_TIMEOUT_OR_HANG,
            False,
            "hang: /health 200 but the engine sat idle (no CPU used, no log written) "
            "with the request open",
        )
    return (
        Category.STALLED,
        True,
        "the engine is alive but made no progress (no CPU used, no log written) "
        "after the request was given up",
    )


def judge_no_answer(kind: str, progress: Progress | None) -> tuple[Category, bool, str]:
    """Category, transient, and one sentence for a request a live engine did not answer;
    its progress was sampled after the request was given up (:func:`judge_silence`)."""
    if kind not in ("timeout", "connection"):
        what = "answered the request with 5xx" if kind == "server_error" else "failed a request"
        return Category.RUNTIME_CRASH, False, f"the engine is up but {what}"
    return judge_silence(working=progress is not None and progress.progressing, watched=False)
