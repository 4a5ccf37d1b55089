"""Request timeouts from measured speed; what a request without an answer means."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from aiohttp import web

from bringup.errors import RequestError
from bringup.http import OpenAIClient
from bringup.server.progress import (
    FIRST_LOOK_TIMEOUT_S,
    MIN_TIMEOUT_S,
    TIMEOUT_MARGIN,
    Progress,
    ProgressMeter,
    judge_no_answer,
    listener_pid,
    request_failure_kind,
    request_timeout_s,
)
from bringup.verdict import Category


def test_timeout_follows_the_measured_decode_rate() -> None:
    # 64 tokens at 4 tok/s take 16 s: ten times that is the wait
    assert request_timeout_s(64, 4.0) == TIMEOUT_MARGIN * 16
    # a fast engine still gets the floor, an unmeasured one the first-look wait
    assert request_timeout_s(8, 1000.0) == MIN_TIMEOUT_S
    assert request_timeout_s(64, None) == FIRST_LOOK_TIMEOUT_S
    assert request_timeout_s(64, 0.0) == FIRST_LOOK_TIMEOUT_S
    assert request_timeout_s(64, 2.0) > request_timeout_s(64, 4.0)


async def test_kinds_come_from_types_and_status_not_wording() -> None:
    # every message here says "timed out"; only what happened decides the kind
    release = asyncio.Event()  # "slow" answers only once the test is done with it

    async def answer(request: web.Request) -> web.Response:
        if request.path == "/busy":
            return web.Response(status=503, text="upstream timed out")
        if request.path == "/bad":
            return web.Response(status=200, text="timed out")
        await release.wait()  # past the short timeout below however busy the machine is
        return web.Response(text="late")

    app = web.Application()
    app.router.add_route("POST", "/{name}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    kinds: dict[str, str] = {}
    try:
        # the answered ones must not time out on a busy machine; only "slow" should
        for name, timeout_s in (("busy", 120.0), ("bad", 120.0), ("slow", 0.5)):
            async with OpenAIClient(f"http://127.0.0.1:{port}", timeout_s=timeout_s) as client:
                with pytest.raises(RequestError) as caught:
                    await client.post_json(f"/{name}", {})
                kinds[name] = request_failure_kind(caught.value)
    finally:
        release.set()  # else the clean-up waits for the held answer
        await runner.cleanup()
    async with OpenAIClient(f"http://127.0.0.1:{port}", timeout_s=5) as client:
        with pytest.raises(RequestError) as caught:  # nothing listens there any more
            await client.post_json("/gone", {})
        kinds["gone"] = request_failure_kind(caught.value)
    assert kinds == {
        "busy": "server_error",
        "bad": "other",
        "slow": "timeout",
        "gone": "connection",
    }
    # exceptions that never became a RequestError are judged by their type too
    assert request_failure_kind(TimeoutError()) == "timeout"
    assert request_failure_kind(ConnectionResetError("timed out")) == "connection"
    assert request_failure_kind(ValueError("timed out")) == "other"


def test_progress_decides_slow_or_stalled_and_5xx_is_a_crash() -> None:
    working = Progress(cpu_s=1.5, log_bytes=0, window_s=2.0)
    idle = Progress(cpu_s=0.0, log_bytes=0, window_s=2.0)
    logging = Progress(cpu_s=0.0, log_bytes=120, window_s=2.0)
    assert judge_no_answer("timeout", working)[:2] == (Category.SLOW_RESPONSE, True)
    assert judge_no_answer("timeout", logging)[:2] == (Category.SLOW_RESPONSE, True)
    assert judge_no_answer("timeout", idle)[:2] == (Category.STALLED, True)
    assert judge_no_answer("connection", idle)[:2] == (Category.STALLED, True)
    assert judge_no_answer("server_error", working)[:2] == (Category.RUNTIME_CRASH, False)
    assert judge_no_answer("other", working)[:2] == (Category.RUNTIME_CRASH, False)


def test_the_listener_of_a_loopback_url_is_found_and_this_process_is_not() -> None:
    code = (
        "import socket, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "print(s.getsockname()[1], flush=True); time.sleep(60)\n"
    )
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        assert listener_pid(f"http://127.0.0.1:{port}") == server.pid
    finally:
        server.kill()
        server.wait()
    with socket.socket() as own:
        own.bind(("127.0.0.1", 0))
        own.listen()
        # a server in this very process: its CPU time would be the benchmark's own
        assert listener_pid(f"http://127.0.0.1:{own.getsockname()[1]}") is None
    assert listener_pid("http://192.0.2.1:8000") is None  # not this host


async def test_the_meter_walks_proc_on_a_thread_not_the_event_loop(tmp_path: Path) -> None:
    readers: list[int] = []
    meter = ProgressMeter(os.getpid(), tmp_path / "log", period_s=0.05)
    read = meter._read

    def spy() -> tuple[float, float, int]:
        readers.append(threading.get_ident())
        return read()

    meter._read = spy  # type: ignore[method-assign]
    meter.start()
    await asyncio.sleep(0.5)
    await meter.stop()
    assert readers and threading.main_thread().ident not in readers
    assert len(meter.samples) == len(readers)
