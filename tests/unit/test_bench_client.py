"""The streaming client: stamped reads, request bodies and error kinds."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import orjson

from bringup.bench import BenchConfig
from bringup.bench.client import make_session, request_body, send, stream_pool
from bringup.bench.records import RequestRecord
from bringup.http.urls import api_url, root_url
from bringup.testing.fakeserver import FakeServer, FakeServerConfig
from bringup.testing.hogs import Slack


async def _one(srv: FakeServer, cfg: BenchConfig) -> tuple[RequestRecord, str | None]:
    async with stream_pool(srv.url, cfg) as pool:
        rec = RequestRecord(index=0, scheduled=0.0)
        body = request_body(cfg, "a b c", length_options=True)
        detail = await send(pool, body, rec, 10.0)
    return rec, detail


async def test_every_event_is_stamped_on_receipt() -> None:
    cfg = BenchConfig(output_tokens=6)
    async with FakeServer(FakeServerConfig(event_rate=100)) as srv:
        rec, detail = await _one(srv, cfg)
    assert rec.ok and detail is None
    assert rec.output_tokens == 6 and len(rec.event_times) == 6
    # 10 ms apart on the server: separate reads, so separate stamps
    assert all(b > a for a, b in zip(rec.event_times, rec.event_times[1:], strict=False))
    assert len(rec.client_lag) == 6 and all(lag >= 0 for lag in rec.client_lag)
    assert rec.sent < rec.event_times[0] <= rec.end


async def test_chunks_of_several_tokens_count_every_token() -> None:
    async with FakeServer(FakeServerConfig(event_rate=200, tokens_per_event=2)) as srv:
        rec, _ = await _one(srv, BenchConfig(output_tokens=8))
    assert rec.ok and rec.output_tokens == 8 and len(rec.event_times) == 4
    assert rec.event_tokens == [2, 2, 2, 2]


async def test_cut_stream_and_http_errors_have_kinds() -> None:
    async with FakeServer(FakeServerConfig(event_rate=200, drop_after_events=2)) as srv:
        rec, _ = await _one(srv, BenchConfig(output_tokens=6))
    assert rec.error == "disconnect"
    assert not rec.ok
    async with FakeServer(FakeServerConfig(fail_every=1)) as srv:
        rec, detail = await _one(srv, BenchConfig(output_tokens=6))
    assert rec.error == "http_500" and detail is not None and "injected" in detail
    cfg = BenchConfig(output_tokens=2)
    async with stream_pool("http://127.0.0.1:9", cfg) as pool:
        rec = RequestRecord(index=0, scheduled=0.0)
        await send(pool, b"{}", rec)
    assert rec.error == "connect"


async def test_timeout_while_streaming_is_a_timeout(slack: Slack) -> None:
    async with FakeServer(FakeServerConfig(event_rate=2)) as srv:
        cfg = BenchConfig(output_tokens=20)
        async with stream_pool(srv.url, cfg) as pool:
            rec = RequestRecord(index=0, scheduled=0.0)
            body = request_body(cfg, "x", length_options=False)
            await send(pool, body, rec, 0.3)
        # the server sees the close on one of its next turns
        deadline = time.monotonic() + 1 + slack(25)
        while srv.stats.active and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert srv.stats.active == 0  # the timed-out stream's connection was closed
    assert rec.error == "timeout"


def test_request_bodies_and_urls() -> None:
    cfg = BenchConfig(output_tokens=7, model="m", endpoint="chat")
    body = orjson.loads(request_body(cfg, "hello", length_options=True))
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert body["max_tokens"] == 7 and body["min_tokens"] == 7 and body["ignore_eos"] is True
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    plain = orjson.loads(request_body(BenchConfig(), "x", length_options=False))
    assert "ignore_eos" not in plain and plain["prompt"] == "x" and "model" not in plain
    assert api_url("http://h:1/v1/", "completions") == "http://h:1/v1/completions"
    assert root_url("http://h:1/v1", "tokenize") == "http://h:1/tokenize"


async def test_api_key_goes_in_the_header_only() -> None:
    cfg = BenchConfig(api_key="sk-test")
    async with make_session(cfg, 1) as session:
        assert session.headers["Authorization"] == "Bearer sk-test"
    assert isinstance(session, aiohttp.ClientSession)
    pool = stream_pool("http://127.0.0.1:9", cfg)
    assert b"\r\nAuthorization: Bearer sk-test\r\n" in pool.head
    assert b"sk-test" not in request_body(cfg, "x", length_options=True)


async def test_unannounced_close_after_a_stream_is_retried_once_not_an_error() -> None:
    cfg = BenchConfig(output_tokens=3)
    fake = FakeServer(FakeServerConfig(event_rate=1000, close_after_stream=True))
    async with fake as srv, stream_pool(srv.url, cfg) as pool:
        recs = []
        for i in range(3):
            rec = RequestRecord(index=i, scheduled=0.0)
            body = request_body(cfg, "x", length_options=True)
            await send(pool, body, rec, 10.0)
            recs.append(rec)
    assert all(r.ok and r.output_tokens == 3 for r in recs)
    assert recs[0].retries == 0
    assert srv.stats.requests == 3  # a retry only follows a request the server never read
