"""The watch catches what /health misses: a server that says healthy and answers garbage."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from bringup.checks.probe import ProbeResult
from bringup.watch import WatchEvent, WatchOptions, run_command, watch_server


class Server:
    """/health is always 200; the answers are right or garbage as the test says."""

    def __init__(self) -> None:
        self.garbage = True
        self.completions = 0
        self.hang_after: int | None = None  # completions after this many never answer
        self.release = asyncio.Event()  # lets a hung handler end at teardown
        self.url = ""

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def complete(self, request: web.Request) -> web.Response:
        self.completions += 1
        if self.hang_after is not None and self.completions > self.hang_after:
            await self.release.wait()
        text = "!!!!!!!!!!!!!!!!" if self.garbage else " Paris, the capital"
        return web.json_response({"choices": [{"text": text, "finish_reason": "length"}]})


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = Server()
    app = web.Application()
    app.add_routes([web.get("/health", srv.health), web.post("/v1/completions", srv.complete)])
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    srv.url = f"http://127.0.0.1:{port}"
    yield srv
    srv.release.set()
    await runner.cleanup()


async def test_healthy_but_garbage_trips_after_n_failures(server: Server) -> None:
    seen: list[WatchEvent] = []
    out = await watch_server(
        server.url, WatchOptions(interval_s=0.01, failures=3, timeout_s=120), on_verdict=seen.append
    )
    assert out.tripped and out.probes == 3 and server.completions == 3
    assert [e.consecutive_failures for e in seen] == [1, 2, 3]
    assert all(e.result.health_status == 200 for e in seen)  # /health alone says fine
    assert "garbage" in seen[-1].result.verdict


async def test_right_answers_never_trip(server: Server) -> None:
    server.garbage = False
    out = await watch_server(server.url, WatchOptions(interval_s=0.01, failures=1, max_probes=3))
    assert not out.tripped and out.probes == 3 and out.failed == 0
    assert out.last is not None and out.last.passed and "Paris" in out.last.verdict


async def test_health_200_and_no_answer_is_a_hang_found_by_the_watchdog(server: Server) -> None:
    server.garbage = False
    server.hang_after = 2
    seen: list[WatchEvent] = []
    options = WatchOptions(interval_s=0.01, failures=1, timeout_s=120, stall_floor_s=1.0)
    out = await watch_server(server.url, options, on_verdict=seen.append)
    assert out.tripped and [e.result.passed for e in seen] == [True, True, False]
    hung = seen[-1].result
    assert hung.verdict.startswith("hang: /health 200") and hung.hang_s is not None
    # the watchdog (factor x the passing probes' time, floor 1 s), not the 120 s timeout
    assert 1.0 <= hung.hang_s < 60, hung.hang_s


async def test_a_pass_resets_the_count() -> None:
    verdicts = iter([False, False, True, False, False, True])

    async def probe(url: str) -> ProbeResult:
        ok = next(verdicts)
        return ProbeResult(url=url, passed=ok, verdict="ok" if ok else "fail")

    out = await watch_server(
        "http://x", WatchOptions(interval_s=0, failures=3, max_probes=6), probe=probe
    )
    assert not out.tripped and out.failed == 4


async def test_on_trip_that_handles_it_keeps_watching() -> None:
    async def probe(url: str) -> ProbeResult:
        return ProbeResult(url=url, passed=False, verdict="fail")

    trips: list[int] = []

    def on_trip(e: WatchEvent) -> bool:
        trips.append(e.consecutive_failures)
        return len(trips) < 2  # handled once, then give up

    out = await watch_server(
        "http://x", WatchOptions(interval_s=0, failures=2), probe=probe, on_trip=on_trip
    )
    assert trips == [2, 2] and out.tripped and out.probes == 4


async def test_slow_probes_never_trip_and_do_not_end_a_run_of_failures() -> None:
    kinds = iter(["slow", "slow", "slow", "fail", "slow", "fail", "pass", "fail", "slow", "fail"])

    async def probe(url: str) -> ProbeResult:
        kind = next(kinds)
        return ProbeResult(
            url=url,
            passed=kind == "pass",
            verdict=kind,
            slow_s=1.0 if kind == "slow" else None,
        )

    seen: list[WatchEvent] = []
    out = await watch_server(
        "http://x",
        WatchOptions(interval_s=0, failures=3, max_probes=10),
        probe=probe,
        on_verdict=seen.append,
    )
    # three slow probes in a row are not three failures; the pass resets the count
    assert [e.consecutive_failures for e in seen] == [0, 0, 0, 1, 1, 2, 0, 1, 1, 2]
    assert not out.tripped and out.slow == 5 and out.failed == 4 and out.probes == 10


async def test_slow_probes_never_trip_even_without_an_end() -> None:
    async def probe(url: str) -> ProbeResult:
        return ProbeResult(url=url, passed=False, verdict="slow", slow_s=2.0)

    out = await watch_server(
        "http://x", WatchOptions(interval_s=0, failures=1, max_probes=5), probe=probe
    )
    assert not out.tripped and out.trips == 0 and out.slow == 5 and out.failed == 0


def test_run_command_without_shell(tmp_path: Path) -> None:
    marker = tmp_path / "a b;c"
    assert run_command(["touch", str(marker)]) == 0 and marker.exists()
    assert run_command(["/nonexistent/restart-it"]) == 127


async def _cli(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "bringup"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode()


async def test_cli_exits_non_zero_after_n_failures(server: Server) -> None:
    code, out = await _cli("watch", server.url, "--interval", "0.05", "--failures", "2")
    assert code == 1, out
    lines = [ln for ln in out.splitlines() if "fail: garbage output" in ln]
    assert len(lines) == 2 and lines[-1].endswith("[2/2]")
    assert "2 consecutive failed probes" in out


async def test_cli_runs_the_on_failure_command_and_goes_on(server: Server, tmp_path: Path) -> None:
    marker = tmp_path / "restarted it"
    code, out = await _cli(
        "watch",
        server.url,
        "--interval",
        "0.05",
        "--failures",
        "1",
        "--count",
        "2",
        "--on-failure",
        f"touch '{marker}'",
    )
    assert marker.exists(), out
    assert out.count("on-failure command exited 0") == 2 and code == 1
    server.garbage = False
    code, out = await _cli("watch", server.url, "--interval", "0.05", "--count", "1")
    assert code == 0 and "ok: health 200" in out


async def test_recheck_on_a_schedule_trips_on_a_regression(server: Server) -> None:
    server.garbage = False
    verdicts = iter([("no regression beyond the noise", False), ("output_tok_s -50%", True)])
    calls: list[float] = []

    async def recheck() -> tuple[str, bool]:
        calls.append(asyncio.get_running_loop().time())
        return next(verdicts)

    options = WatchOptions(interval_s=0.05, failures=3, recheck_every_s=0.1)
    out = await watch_server(server.url, options, recheck=recheck)
    assert out.tripped and len(calls) == 2
    assert [bad for _, _, bad in out.rechecks] == [False, True]
    assert out.probes >= 2 and out.failed == 0  # the probes were fine: the recheck tripped
