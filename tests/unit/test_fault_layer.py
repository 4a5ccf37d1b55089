"""The fault layer forwards faithfully and plants only the fault it was asked for."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bringup.testing.fakeserver import FakeServer, FakeServerConfig
from bringup.testing.faults import Fault, FaultProxy


async def _proxy(upstream: str, fault: Fault) -> tuple[TestServer, FaultProxy]:
    proxy = FaultProxy(upstream, fault)
    proxy.session = aiohttp.ClientSession()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server, proxy


def test_rewrites_touch_only_their_fault() -> None:
    long = {"prompt": "x" * 3000, "temperature": 0.0}
    assert FaultProxy("u", Fault("none"))._rewrite(dict(long)) == long
    cut = FaultProxy("u", Fault("truncate", keep=100))._rewrite(dict(long))
    assert cut["prompt"] == "x" * 100 and cut["temperature"] == 0.0
    hot = FaultProxy("u", Fault("hot_after", after=2))
    hot.completions = 2
    assert hot._rewrite({"temperature": 0.0})["temperature"] == 0.0
    hot.completions = 3
    assert hot._rewrite({"temperature": 0.0})["temperature"] == 1.5
    busy = FaultProxy("u", Fault("hot_when_busy"))
    busy.in_flight = 1
    assert busy._rewrite({"temperature": 0.0})["temperature"] == 0.0
    busy.in_flight = 2
    assert busy._rewrite({"temperature": 0.0})["temperature"] == 1.0


@pytest.mark.parametrize("fault", ["none", "stall"])
async def test_streams_pass_through_or_go_silent_with_health_200(fault: str) -> None:
    async with FakeServer(FakeServerConfig(event_rate=200)) as fake:
        server, proxy = await _proxy(fake.url, Fault(fault, after=0, events=3))
        url = str(server.make_url("/")).rstrip("/")
        body = {"prompt": "x", "max_tokens": 10, "stream": True}
        got = b""
        try:
            async with aiohttp.ClientSession() as s:
                async with s.post(f"{url}/v1/completions", json=body) as resp:
                    try:
                        async with asyncio.timeout(2.0):
                            async for piece in resp.content.iter_any():
                                got += piece
                    except TimeoutError:
                        pass
                async with s.get(f"{url}/health") as health:
                    assert health.status == 200
        finally:
            await server.close()
            assert proxy.session is not None
            await proxy.session.close()
    events = got.count(b"data: ")
    if fault == "none":
        assert b"[DONE]" in got and events == 11  # 10 tokens and [DONE]
    else:
        assert events == 3 and b"[DONE]" not in got
