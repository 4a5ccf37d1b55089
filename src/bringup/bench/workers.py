"""Drive one measured window, here or split over several client processes.

``drive(window)`` runs one shard of a window on the current loop. ``ClientProcesses`` keeps
``n`` worker processes (``python -m bringup.bench.shard_process``) for a whole benchmark; each
gets its shard of every window as a length-prefixed pickle on stdin and answers with its
``LevelRun`` on stdout. Plain subprocesses rather than ``multiprocessing``, so the caller's
``__main__`` is never re-imported and no ``if __name__ == "__main__"`` guard is needed.
Every shard sleeps until the window's absolute start ``t0`` (monotonic time is shared by the
processes of a host), so the shards start together.
"""

from __future__ import annotations

import asyncio
import gc
import pickle
import struct
import sys
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from bringup.bench.client import stream_pool
from bringup.bench.config import BenchConfig
from bringup.bench.load import LevelRun, closed_loop, open_loop
from bringup.bench.records import now
from bringup.bench.stall import StallWatch
from bringup.bench.stream_http import StreamPool

T = TypeVar("T")
FRAME_LEN = struct.Struct("<Q")


@dataclass
class Window:
    """What one shard needs to drive one measured window."""

    base_url: str
    cfg: BenchConfig
    bodies: list[bytes]
    kind: Literal["concurrency", "rate"]
    value: float
    t0: float
    offsets: list[float] | None
    shard: tuple[int, int] = (0, 1)
    watch: StallWatch | None = None


async def drive(win: Window) -> LevelRun:
    """Run this window's shard on the running loop, with its own connection pool.

    The cyclic garbage collector is paused for the window: a full collection over the
    window's many small records stalls the loop for tens to hundreds of milliseconds, which
    would show up as lag. Records hold no cycles; whatever cycles arise are collected at
    the end of the window. Everything the window allocated is still in the young
    generations then (nothing is collected while paused), so only those are collected: a
    full collection would walk every long-lived object of the process as well (in a
    process that has loaded Ray, about 0.04 CPU-s of a trial's 0.17).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return await _drive(win)
    finally:
        if was_enabled:
            gc.enable()
        gc.collect(1)


async def _drive(win: Window) -> LevelRun:
    cfg = win.cfg
    async with stream_pool(win.base_url, cfg) as pool:
        delay = win.t0 - now()
        if delay > 0:
            await asyncio.sleep(delay)
        run = await _level(win, pool)
        run.arrival_clock = pool.arrival_clock
        return run


async def _level(win: Window, pool: StreamPool) -> LevelRun:
    cfg = win.cfg
    if win.kind == "concurrency":
        bounded = cfg.duration_s is None
        return await closed_loop(
            pool,
            win.bodies,
            timeout_s=cfg.timeout_s,
            concurrency=int(win.value),
            requests=cfg.requests_at(int(win.value)) if bounded else None,
            duration_s=cfg.duration_s,
            shard=win.shard,
            watch=win.watch,
        )
    assert win.offsets is not None
    return await open_loop(
        pool,
        win.bodies,
        timeout_s=cfg.timeout_s,
        t0=win.t0,
        offsets=win.offsets,
        max_concurrency=cfg.max_concurrency,
        shard=win.shard,
        watch=win.watch,
    )


def run_on_fast_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on uvloop where it is installed, else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


async def read_frame(reader: asyncio.StreamReader) -> Any:
    size = FRAME_LEN.unpack(await reader.readexactly(FRAME_LEN.size))[0]
    return pickle.loads(await reader.readexactly(size))


def frame(obj: object) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return FRAME_LEN.pack(len(data)) + data


class ClientProcesses:
    """``n`` long-lived client processes that each drive one shard of every window."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[asyncio.subprocess.Process] = []

    async def start(self) -> ClientProcesses:
        for _ in range(self.n):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bringup.bench.shard_process",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            self.procs.append(proc)
        for proc in self.procs:  # each says "ready" once its imports are done
            assert proc.stdout is not None
            await read_frame(proc.stdout)
        return self

    async def run(self, win: Window, lead_s: float = 0.1) -> LevelRun:
        """Drive ``win`` over every process, starting ``lead_s`` from now; merged records."""
        win = replace(win, t0=now() + lead_s)
        for k, proc in enumerate(self.procs):
            assert proc.stdin is not None
            proc.stdin.write(frame(replace(win, shard=(k, self.n))))
            await proc.stdin.drain()
        merged = LevelRun()
        for proc in self.procs:
            assert proc.stdout is not None
            part = await read_frame(proc.stdout)
            if isinstance(part, BaseException):
                raise part
            merged.merge(part)
        return merged

    async def close(self) -> None:
        for proc in self.procs:
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()
