"""The HTTP layer: one URL normaliser, answers that say why there was none, a shared session."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bringup.checks.stream_text import Asked, check_stream
from bringup.http import OpenAIClient, api_url, open_session, root_url, server_root
from bringup.http.session import STALE
from bringup.testing.fakeserver import FakeServer, FakeServerConfig


@pytest.mark.parametrize("given", ["http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"])
def test_every_spelling_of_a_server_reaches_the_same_endpoints(given: str) -> None:
    assert server_root(given) == "http://h:1"
    assert api_url(given, "completions") == "http://h:1/v1/completions"
    assert api_url(given, "/models") == "http://h:1/v1/models"
    assert root_url(given, "tokenize") == root_url(given, "/tokenize") == "http://h:1/tokenize"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_answer_says_why_nothing_answered() -> None:
    async with OpenAIClient(f"http://127.0.0.1:{_closed_port()}", timeout_s=5) as c:
        refused = await c.answer("GET", "/health")
    assert refused.status == 0 and refused.why == "connection refused"

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(60)  # past the short timeout below however busy the machine is
        return web.Response(text="late")

    async def hang_up(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()  # the server drops the connection without a response
        return web.Response()

    app = web.Application()
    app.add_routes([web.get("/slow", slow), web.get("/drop", hang_up)])
    async with TestServer(app, host="127.0.0.1") as server:
        url = str(server.make_url("/"))
        async with OpenAIClient(url, timeout_s=0.5) as c:
            late = await c.answer("GET", "/slow")
        # these must answer, not time out: a busy machine may take seconds
        async with OpenAIClient(url, timeout_s=120) as c:
            dropped = await c.answer("GET", "/drop")
            missing = await c.answer("GET", "/nothing-here")
    assert late.status == 0 and late.why == "timeout"
    assert dropped.status == 0 and dropped.why == STALE
    assert missing.status == 404  # an HTTP error is an answer, not a failure to answer


async def test_a_shared_session_keeps_its_headers_and_stays_open() -> None:
    seen: list[str | None] = []

    async def models(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"data": [{"id": "m1"}, {"id": "m2"}]})

    app = web.Application()
    app.add_routes([web.get("/v1/models", models)])
    async with TestServer(app, host="127.0.0.1") as server:
        url = str(server.make_url("/v1"))
        async with open_session(timeout_s=5, api_key="sk-test") as session:
            async with OpenAIClient.sharing(session, url) as c:
                assert await c.models() == ["m1", "m2"]
            assert not session.closed  # its owner closes it
            async with session.get(api_url(url, "models")) as resp:
                assert resp.status == 200
    assert seen == ["Bearer sk-test", "Bearer sk-test"]
    assert isinstance(session, aiohttp.ClientSession) and session.closed


async def test_a_streamed_completion_leaves_no_stale_connection_behind() -> None:
    # llama-server closes a connection after its stream unannounced: the request after a
    # streamed one must not be sent down that connection (it failed here before the fix)
    fake = FakeServer(FakeServerConfig(event_rate=1000, close_after_stream=True))
    async with fake as srv, OpenAIClient(srv.url) as c:
        for _ in range(30):
            plain = await c.complete("x", max_tokens=3)
            streamed = await check_stream(c, Asked("x", "x", plain.text, 3, plain.elapsed_s))
            assert streamed.matched, streamed.error or streamed.evidence
            assert (await c.complete("x", max_tokens=3)).text == plain.text
