"""The stall watchdog: a stream that goes silent with /health 200 is a hang, found fast."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bringup.bench import BenchConfig, RequestRecord, run_benchmark
from bringup.bench.records import now
from bringup.bench.stall import StallError, StallWatch, await_progress, expected_from
from bringup.checks import check_under_load
from bringup.testing.fakeserver import FakeServer, FakeServerConfig
from bringup.testing.hogs import cpu_hogs
from bringup.verdict import Category


def _cfg(**kw: object) -> BenchConfig:
    base: dict[str, object] = {
        "concurrency": [1, 4], "input_tokens": 8, "output_tokens": 30, "requests": 8,
        "warmup": 1, "model": "fake-model", "timeout_s": 300.0, "stall_floor_s": 2.0,
    }  # fmt: skip
    return BenchConfig(**(base | kw))  # type: ignore[arg-type]


async def test_mid_stream_stall_is_a_hang_verdict_long_before_the_timeout() -> None:
    # the preparation's probe and the warm-up stream whole (the warm-up times the server at
    # idle, which arms the watchdog); every later stream stops after 5 tokens
    fake = FakeServerConfig(event_rate=100, stall_after_events=5, stall_after_requests=2)
    async with FakeServer(fake) as srv:
        started = time.monotonic()
        report = await run_benchmark(srv.url, _cfg())
        took = time.monotonic() - started
    # one watchdog period (2 s floor), not 300 s per request one after another
    assert took < 60, took
    stalled = [lv for lv in report.levels if lv.stall]
    assert len(stalled) == 1 and report.levels[-1] is stalled[0]
    assert len(report.levels) == 1  # the c4 level is not run against a hung server
    stall = stalled[0].stall
    assert stall is not None and stall["health_status"] == 200 and stall["requests"] >= 1
    verdict = check_under_load(report.levels)
    assert verdict.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert "no token for" in verdict.evidence[0] and "mid-stream" in verdict.evidence[0]
    assert "/health answered 200" in verdict.evidence[0]


async def test_healthy_slow_streams_do_not_trip_the_watchdog() -> None:
    async with FakeServer(FakeServerConfig(event_rate=40)) as srv:
        report = await run_benchmark(srv.url, _cfg())
    assert all(lv.stall is None for lv in report.levels)
    assert check_under_load(report.levels).passed


def test_watchdog_scales_with_measured_itl_and_concurrency() -> None:
    rec = RequestRecord(index=0, scheduled=0.0, sent=0.0, end=1.1)
    rec.event_times = [0.1 + 0.5 * i for i in range(3)]  # 0.5 s per token
    rec.event_tokens = [1, 1, 1]
    rec.output_tokens = 3
    watch = expected_from([rec], concurrency=4, factor=20, floor_s=5)
    assert watch is not None and watch.gap_s == 10.0  # 20 x 0.5 s
    assert watch.first_s >= 2 * 4 * 1.1  # may queue behind four whole requests
    assert expected_from([], concurrency=1) is None  # nothing measured: no watchdog


async def test_a_stall_from_the_first_stream_is_caught_by_the_idle_sentinels_timing() -> None:
    # every stream after the preparation's probe stalls: no stream was ever timed whole, so
    # the watchdog comes from the idle (not streamed) sentinel requests
    fake = FakeServerConfig(event_rate=100, stall_after_events=5, stall_after_requests=1)
    async with FakeServer(fake) as srv:
        started = time.monotonic()
        report = await run_benchmark(srv.url, _cfg(sentinels=("The Eiffel Tower is in",)))
        took = time.monotonic() - started
    assert took < 60, took
    assert report.levels[0].stall is not None
    assert check_under_load(report.levels).category is Category.STARTUP_TIMEOUT_OR_HANG


async def _stall_beside(
    engine_code: str, tmp_path: Path, **kw: object
) -> tuple[Category | None, list[str]]:
    """A stalling fake server, judged as if ``engine_code`` ran as its engine process."""
    log = tmp_path / "engine.log"
    log.write_text("")
    # the interpreter's own start-up is CPU too: judge only what comes after it
    code = f"print('up', flush=True)\n{engine_code}"
    engine = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert engine.stdout is not None and engine.stdout.readline() == "up\n"
        fake = FakeServerConfig(event_rate=100, stall_after_events=5, stall_after_requests=2)
        async with FakeServer(fake) as srv:
            cfg = _cfg(engine_pid=engine.pid, engine_log=str(log), **kw)
            report = await run_benchmark(srv.url, cfg)
    finally:
        engine.kill()
        engine.wait()
    verdict = check_under_load(report.levels)
    return verdict.category, verdict.evidence


async def test_a_stall_through_which_the_engine_kept_computing_is_slow_not_a_hang(
    tmp_path: Path,
) -> None:
    category, evidence = await _stall_beside("while True: pass", tmp_path, stall_slow_factor=2)
    assert category is Category.SLOW_RESPONSE
    assert "/health answered 200" in evidence[0] and "CPU-s" in evidence[1]


async def test_a_stall_through_which_the_engine_did_nothing_stays_a_hang(
    tmp_path: Path,
) -> None:
    category, evidence = await _stall_beside("import time; time.sleep(120)", tmp_path)
    assert category is Category.STARTUP_TIMEOUT_OR_HANG
    assert "0.00 CPU-s and wrote 0 log bytes" in evidence[1]


async def _answered_after(
    delay_s: float, watch: StallWatch, reads: list[tuple[float, bytes]] | None = None
) -> float:
    """Wait on a stream whose end comes after ``delay_s`` with no byte; its wait in s."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[int] = loop.create_future()
    loop.call_later(delay_s, done.set_result, 200)
    started = time.monotonic()
    assert await await_progress(done, reads if reads is not None else [], watch) == 200
    return time.monotonic() - started


async def test_a_slow_first_token_while_the_engine_computes_is_waited_for() -> None:
    # the watchdog's limit (from an idle warm-up) is 1 s; the machine got busier and the
    # first token takes 4: the engine's CPU time says it works, so no stall is called
    with cpu_hogs(1) as engine:
        watch = StallWatch(gap_s=1.0, first_s=1.0, pid=engine.pids[0])
        assert await _answered_after(4.0, watch) >= 4.0


async def test_a_silent_engine_is_a_stall_and_a_busy_one_only_slow_at_the_bound() -> None:
    code = "print('up', flush=True)\nimport time; time.sleep(120)"
    sleeper = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        # the interpreter's own start-up is CPU too: judge only what comes after it
        assert sleeper.stdout is not None and sleeper.stdout.readline() == "up\n"
        watch = StallWatch(gap_s=1.0, first_s=1.0, pid=sleeper.pid)
        with pytest.raises(StallError) as stuck:
            await _answered_after(60.0, watch)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert stuck.value.slow is None and "before the first token" in str(stuck.value)
    with cpu_hogs(1) as engine:
        watch = StallWatch(gap_s=1.0, first_s=1.0, pid=engine.pids[0], slow_factor=3)
        with pytest.raises(StallError) as slow:
            await _answered_after(60.0, watch)
    assert slow.value.slow is not None and "CPU-s" in slow.value.slow
    assert slow.value.silent_s >= 3.0 and "the engine kept working" in str(slow.value)


async def test_tokens_on_other_streams_excuse_a_queued_request_not_a_dropped_one() -> None:
    watch = StallWatch(gap_s=1.0, first_s=1.0)  # no engine process to look at
    busy: list[tuple[float, bytes]] = []
    loop = asyncio.get_running_loop()
    other: asyncio.Future[int] = loop.create_future()

    async def produce() -> None:
        while not other.done():
            busy.append((now(), b"data: {}\n\n"))
            await asyncio.sleep(0.1)

    busy.append((now(), b"x"))
    feeder = asyncio.ensure_future(produce())
    streaming = asyncio.ensure_future(await_progress(other, busy, watch))
    try:
        # queued: no byte yet, but the server serves another stream meanwhile
        assert await _answered_after(3.0, watch) >= 3.0
        # started, then left behind while the other stream goes on: a stall
        with pytest.raises(StallError) as dropped:
            await _answered_after(60.0, watch, reads=[(now(), b"data: {}\n\n")])
        assert dropped.value.slow is None and "mid-stream" in str(dropped.value)
    finally:
        other.set_result(200)
        await asyncio.gather(feeder, streaming)


async def test_a_stream_that_ends_empty_forgets_itself_not_an_equal_neighbour() -> None:
    # two streams with no body yet have equal reads ([] == []): ending one must not drop
    # the other, whose own end then found nothing to remove (a ValueError ended the bench)
    watch = StallWatch(gap_s=30.0, first_s=30.0)
    loop = asyncio.get_running_loop()
    first, second = loop.create_future(), loop.create_future()
    mine: list[tuple[float, bytes]] = []
    theirs: list[tuple[float, bytes]] = []
    waiting = asyncio.ensure_future(await_progress(first, mine, watch))
    ending = asyncio.ensure_future(await_progress(second, theirs, watch))
    await asyncio.sleep(0)
    second.set_result(503)
    assert await ending == 503
    assert watch.streams.active == [mine] and watch.streams.active[0] is mine
    mine.append((now(), b"data: {}\n\n"))
    first.set_result(200)
    assert await waiting == 200 and watch.streams.active == []
