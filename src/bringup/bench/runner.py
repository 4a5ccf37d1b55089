"""Run a whole benchmark: prepare prompts, then every level and repeat, then the report.

``run_benchmark`` is a coroutine for callers that own an event loop; ``run_benchmark_sync``
runs it on uvloop. With ``cfg.processes > 1`` each measured window is split over that many
client processes (started once per benchmark, see :mod:`bringup.bench.workers`) that
start together at an absolute time, so the load generator can use more than one core; their
records are merged before any figure is computed.

``progress``, when given, gets one line as each measured window starts and ends, and a
line every ``HEARTBEAT_S`` while a window runs, so a long benchmark says where it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Literal

import aiohttp

from bringup.bench.client import make_session, request_body, stream_pool
from bringup.bench.config import BenchConfig
from bringup.bench.load import LevelRun, arrival_offsets, warm_up
from bringup.bench.metrics import WindowFigures, window_figures
from bringup.bench.prompts import prepare
from bringup.bench.records import RequestRecord, now
from bringup.bench.report import (
    BenchReport,
    LevelResult,
    level_result,
    level_tag,
    load_notes,
)
from bringup.bench.sentinels import SentinelsUnderLoad, answer_all
from bringup.bench.stall import WATCHDOG_ERRORS, StallWatch, expected_from, from_requests
from bringup.bench.workers import ClientProcesses, Window, drive, run_on_fast_loop
from bringup.http import OpenAIClient
from bringup.server.progress import ProgressMeter, listener_pid

_POOL_CAP = 1024  # distinct prompts kept; duration-bounded levels cycle through them
HEARTBEAT_S = 10.0  # a line this often while a window runs: alive, not hung
Progress = Callable[[str], None]


class _Prompts:
    """Encoded bodies handed out in order, so no two windows reuse a prompt until it wraps."""

    def __init__(self, bodies: list[bytes]) -> None:
        self.bodies = bodies
        self.next = 0

    def take(self, n: int | None) -> list[bytes]:
        size = len(self.bodies)
        start = self.next % size
        rotated = self.bodies[start:] + self.bodies[:start]
        if n is None:
            self.next += size // 2
            return rotated
        self.next += n
        return (rotated * (n // size + 1))[:n]


def _pool_size(cfg: BenchConfig) -> int:
    levels = len(cfg.concurrency) + len(cfg.request_rate)
    if cfg.duration_s is not None:
        return _POOL_CAP
    per_level = max([cfg.requests, *(cfg.requests_at(c) for c in cfg.concurrency)])
    return min(_POOL_CAP, levels * cfg.repeats * (per_level + cfg.warmup))


@contextlib.asynccontextmanager
async def _window_progress(progress: Progress | None, what: str) -> AsyncIterator[None]:
    """Say a window started, that it still runs every ``HEARTBEAT_S``, and when it ended."""
    if progress is None:
        yield
        return
    start = time.monotonic()
    progress(f"{what}: measuring")

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            progress(f"{what}: still measuring, {time.monotonic() - start:.0f} s")

    task = asyncio.ensure_future(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    progress(f"{what}: done in {time.monotonic() - start:.1f} s")


async def run_benchmark(
    base_url: str, cfg: BenchConfig, progress: Progress | None = None
) -> BenchReport:
    """Benchmark the OpenAI-compatible server at ``base_url`` (e.g. ``http://127.0.0.1:8080``)."""
    started = time.monotonic()
    pool = await ClientProcesses(cfg.processes).start() if cfg.processes > 1 else None
    levels: list[LevelResult] = []
    meter = (
        ProgressMeter(cfg.engine_pid, Path(cfg.engine_log)).start()
        if cfg.engine_pid and cfg.engine_log
        else None
    )
    try:
        if cfg.stall_watchdog and cfg.engine_pid is None:
            # a server started elsewhere on this host can still be watched for work
            found = await asyncio.to_thread(listener_pid, base_url)
            cfg = dataclasses.replace(cfg, engine_pid=found) if found else cfg
        async with make_session(cfg, max(cfg.concurrency or [1])) as session:
            prepared = await prepare(session, base_url, cfg, _pool_size(cfg))
            run_cfg = BenchConfig(**{**cfg.__dict__, "model": prepared.model})
            bodies = [
                request_body(run_cfg, p, length_options=prepared.length_options)
                for p in prepared.prompts
            ]
            prompts = _Prompts(bodies)
            plan: list[tuple[Literal["concurrency", "rate"], float]] = [
                ("concurrency", float(c)) for c in cfg.concurrency
            ] + [("rate", r) for r in cfg.request_rate]
            asked = time.monotonic()
            idle = await answer_all(session, base_url, run_cfg) if cfg.sentinels else []
            answered = [a for a in idle if a is not None]
            idle_s = (time.monotonic() - asked) / len(answered) if answered else None
            basis: list[RequestRecord] = []  # the first requests answered: the watchdog's basis
            for kind, value in plan:
                windows: list[WindowFigures] = []
                merged = LevelRun()
                watch = SentinelsUnderLoad(session, base_url, run_cfg)
                stall_watch = _stall_watch(cfg, basis, kind, value, idle_s)
                for rep in range(cfg.repeats):
                    warm_c = int(value) if kind == "concurrency" else 1
                    async with stream_pool(base_url, run_cfg) as warm:
                        warmed = await warm_up(
                            warm, prompts.take(cfg.warmup), cfg.warmup, warm_c, cfg.timeout_s,
                            stall_watch,
                        )  # fmt: skip
                    basis = basis or [r for r in warmed.records if r.ok]
                    stall_watch = _stall_watch(cfg, basis, kind, value, idle_s)
                    if warmed.stalled:
                        merged.merge(warmed)
                        break
                    if rep == 0:
                        watch.timeout_s = _sentinel_timeout(cfg, stall_watch)
                        watch.start()
                    tag = level_tag(kind, value)
                    async with _window_progress(progress, f"{tag} {rep + 1}/{cfg.repeats}"):
                        run = await _measure(
                            base_url, run_cfg, prompts, kind, value, rep, pool, stall_watch
                        )
                    if progress is not None:
                        ok = sum(1 for r in run.records if r.ok)
                        progress(f"{tag} {rep + 1}/{cfg.repeats}: {ok} ok, "
                                 f"{len(run.records) - ok} failed")  # fmt: skip
                    windows.append(window_figures(run.records))
                    merged.merge(run)
                    basis = basis or [r for r in run.records if r.ok]
                    if run.stalled:
                        break
                level_ended = time.monotonic()  # the watchdog fired just before, if it did
                level = level_result(
                    kind,
                    value,
                    windows,
                    merged.records,
                    asked_tokens=cfg.output_tokens,
                    samples=cfg.sample_outputs,
                    error_examples=merged.error_examples,
                    arrival_clock=merged.arrival_clock,
                )
                if cfg.sentinels:
                    answers = await watch.stop(grace_s=1.0 if merged.stalled else 30.0)
                    level.samples = [a for a in answers if a is not None]
                    level.sentinel_prompts = list(cfg.sentinels[: len(answers)])
                    level.sentinel_answers = answers
                    level.idle_answers = idle[: len(answers)]
                levels.append(level)
                if merged.stalled:
                    assert stall_watch is not None
                    # judged over the silence's second half, before /health is asked (a
                    # request the engine logs): an engine that finished the work it had and
                    # then fell idle is stuck; a slow one works on through to the end
                    limit = min(stall_watch.gap_s, stall_watch.first_s)
                    p = meter.over(limit / 2, end_t=level_ended) if meter is not None else None
                    level.stall = await _stall_record(session, base_url, cfg, merged, stall_watch)
                    if p is not None:
                        level.stall["progress"] = {
                            "cpu_s": p.cpu_s,
                            "log_bytes": p.log_bytes,
                            "window_s": p.window_s,
                            "progressing": p.progressing,
                            "evidence": p.evidence,
                        }
                    break  # every further level would wait out the watchdog again
    finally:
        if meter is not None:
            await meter.stop()
        if pool is not None:
            await pool.close()
    notes = []
    if cfg.ignore_eos and not prepared.length_options:
        notes.append("the server refused ignore_eos/min_tokens; outputs may end early at EOS")
    if not prepared.tokenizer:
        notes.append("no server tokenizer; prompt lengths are approximate (word-based)")
    notes += load_notes(levels)
    return BenchReport(
        levels=levels,
        config=cfg.public() | {"model": prepared.model},
        model=prepared.model,
        tokenizer=prepared.tokenizer,
        length_options=prepared.length_options,
        notes=notes,
        wall_s=time.monotonic() - started,
    )


async def _measure(
    base_url: str,
    cfg: BenchConfig,
    prompts: _Prompts,
    kind: Literal["concurrency", "rate"],
    value: float,
    repeat: int,
    pool: ClientProcesses | None,
    stall_watch: StallWatch | None = None,
) -> LevelRun:
    offsets = None
    if kind == "rate":
        bounded = cfg.requests if cfg.duration_s is None else None
        seed = cfg.seed * 1_000_003 + repeat * 7919 + int(value * 1000)
        offsets = arrival_offsets(
            value, cfg.arrival, count=bounded, duration_s=cfg.duration_s, seed=seed
        )
        bodies = prompts.take(len(offsets))
    else:
        bounded = cfg.requests_at(int(value)) if cfg.duration_s is None else None
        bodies = prompts.take(bounded)
    win = Window(base_url, cfg, bodies, kind, value, now(), offsets, watch=stall_watch)
    return await (pool.run(win) if pool is not None else drive(win))


def _stall_watch(
    cfg: BenchConfig,
    basis: list[RequestRecord],
    kind: str,
    value: float,
    idle_request_s: float | None = None,
) -> StallWatch | None:
    """From timed streams when there are some, else from the idle sentinels' time."""
    if not cfg.stall_watchdog:
        return None
    streams = int(value) if kind == "concurrency" else max(1, cfg.max_concurrency or 1)
    if basis:
        watch = expected_from(basis, streams, cfg.stall_factor, cfg.stall_floor_s)
    elif idle_request_s is None:
        return None
    else:
        watch = from_requests(
            idle_request_s, cfg.sentinel_tokens, streams, cfg.stall_factor, cfg.stall_floor_s
        )
    if watch is None:
        return None
    return dataclasses.replace(
        watch, pid=cfg.engine_pid, log=cfg.engine_log, slow_factor=cfg.stall_slow_factor
    )


def _sentinel_timeout(cfg: BenchConfig, watch: StallWatch | None) -> float:
    """A sentinel request (not streamed) may take its tokens' worth of watchdog time."""
    if watch is None:
        return cfg.timeout_s
    return min(cfg.timeout_s, watch.first_s + cfg.sentinel_tokens * watch.gap_s)


async def _stall_record(
    session: aiohttp.ClientSession,
    base_url: str,
    cfg: BenchConfig,
    run: LevelRun,
    watch: StallWatch,
) -> dict[str, object]:
    """What the stall was: how many streams, how long silent, and what /health says now."""
    health = await OpenAIClient.sharing(session, base_url).answer(
        "GET", cfg.health_path, timeout_s=min(10.0, watch.gap_s)
    )
    status = health.status or None  # None: no HTTP answer at all
    stalls = sum(1 for r in run.records if r.error == "stall")
    return {
        "requests": sum(1 for r in run.records if r.error in WATCHDOG_ERRORS),
        "detail": run.error_examples.get("stall") or run.error_examples.get("slow", ""),
        # ended only because the engine worked on far too long: slow, never a hang
        "slow": stalls == 0,
        "watchdog": watch.describe(),
        "gap_s": watch.gap_s,
        "health_status": status,
    }


def run_benchmark_sync(
    base_url: str, cfg: BenchConfig, progress: Progress | None = None
) -> BenchReport:
    """``run_benchmark`` on a fresh uvloop event loop (for scripts and the CLI)."""
    return run_on_fast_loop(run_benchmark(base_url, cfg, progress))
