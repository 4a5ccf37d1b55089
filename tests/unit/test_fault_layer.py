"""The fault layer forwards faithfully and plants only the fault it was asked for."""

from __future__ import annotations

import asyncio
import json

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


async def _through(fault: Fault, bodies: list[dict[str, object]]) -> list[bytes]:
    """Each body sent through a proxy with ``fault`` in front of the fake server, in turn."""
    out: list[bytes] = []
    async with FakeServer(FakeServerConfig(event_rate=500)) as fake:
        server, proxy = await _proxy(fake.url, fault)
        url = str(server.make_url("/")).rstrip("/")
        try:
            async with aiohttp.ClientSession() as s:
                for body in bodies:
                    async with s.post(f"{url}/v1/completions", json=body) as resp:
                        out.append(await resp.read())
        finally:
            await server.close()
            assert proxy.session is not None
            await proxy.session.close()
    return out


async def test_held_out_stream_faults_drop_chunks_or_end_after_the_first() -> None:
    body: dict[str, object] = {"prompt": "x", "max_tokens": 9, "stream": True}
    (whole,) = await _through(Fault("none"), [body])
    (dropped,) = await _through(Fault("stream_drop"), [body])
    assert whole.count(b"data: ") == 10 and dropped.count(b"data: ") == 7  # 3, 6, 9 gone
    first, cut = await _through(Fault("early_stop_after", after=1), [body, body])
    assert first.count(b"data: ") == 10
    assert cut.count(b"data: ") == 2 and cut.rstrip().endswith(b"data: [DONE]")


def test_held_out_answer_faults_rewrite_non_streamed_choices() -> None:
    def answer(text: str) -> bytes:
        content = [{"token": t, "logprob": -0.1} for t in text.split(" ")]
        choice = {"text": text, "logprobs": {"content": content}, "finish_reason": "length"}
        return json.dumps({"choices": [choice]}).encode()

    digits = FaultProxy("u", Fault("digits_after", after=1))
    digits.completions = 1
    assert json.loads(digits._answer(answer("2 + 2 = 4"), True))["choices"][0]["text"] == (
        "2 + 2 = 4"
    )
    digits.completions = 2
    doc = json.loads(digits._answer(answer("2 + 2 = 4 9"), True))["choices"][0]
    assert doc["text"] == "3 + 3 = 5 0" and doc["logprobs"]["content"][0]["token"] == "3"
    stop = FaultProxy("u", Fault("early_stop_after", after=0))
    stop.completions = 1
    doc = json.loads(stop._answer(answer("Paris is nice"), True))["choices"][0]
    assert doc["text"] == "Paris" and doc["finish_reason"] == "stop"
    talk = FaultProxy("u", Fault("crosstalk_when_busy"))
    talk.in_flight = 1
    assert json.loads(talk._answer(answer("first"), True))["choices"][0]["text"] == "first"
    talk.in_flight = 2  # another completion is in flight: it gets the previous answer
    assert json.loads(talk._answer(answer("second"), True))["choices"][0]["text"] == "first"
