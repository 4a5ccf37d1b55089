"""The hand-written streaming HTTP/1.1 client, against raw servers that answer in odd ways."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from bringup.bench.stream_http import Exchange, StreamError, StreamPool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    """A loopback server running ``handler`` per connection; yields its URL and a conn count."""
    conns: list[int] = []

    async def wrapped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conns.append(1)
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(wrapped, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/completions", conns
    finally:
        server.close()
        await server.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + await reader.readexactly(length)


async def test_keep_alive_connection_is_reused_and_the_head_is_well_formed() -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                seen.append(await _read_request(reader))
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            await writer.drain()

    async with raw_server(handler) as (url, conns), StreamPool(url, {"X-A": "1"}) as pool:
        for _ in range(3):
            ex = Exchange()
            assert await pool.post(b'{"k":1}', ex, 5.0) == 200
            assert b"".join(b for _, b in ex.reads) == b"hello"
    assert len(conns) == 1  # one connection carried all three
    assert seen[0].startswith(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nX-A: 1\r\nContent-Length: 7\r\n\r\n" in seen[0]
    assert seen[0].endswith(b'{"k":1}')


async def test_body_delimited_by_close_ends_normally() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: a\n\n")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"data: b\n\n")
        await writer.drain()

    async with raw_server(handler) as (url, _), StreamPool(url, {}) as pool:
        ex = Exchange()
        assert await pool.post(b"{}", ex, 5.0) == 200
    reads = ex.reads
    assert b"".join(b for _, b in reads) == b"data: a\n\ndata: b\n\n"
    assert len(reads) == 2 and reads[1][0] - reads[0][0] >= 0.04  # stamped per read


async def test_cut_chunked_body_is_a_disconnect_not_a_stale_retry() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()

    async with raw_server(handler) as (url, _), StreamPool(url, {}) as pool:
        ex = Exchange()
        with pytest.raises(StreamError) as err:
            await pool.post(b"{}", ex, 5.0)
    assert err.value.kind == "disconnect" and not err.value.stale
    assert ex.reads and ex.reads[0][1] == b"hello"
    assert ex.left > 0  # the request had left before the response broke off


async def test_garbage_response_is_a_client_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)

    async with raw_server(handler) as (url, _), StreamPool(url, {}) as pool:
        with pytest.raises(StreamError) as err:
            await pool.post(b"{}", Exchange(), 5.0)
    assert err.value.kind == "client_error" and "bad HTTP response" in str(err.value)


async def test_close_of_an_idle_connection_makes_the_next_request_stale() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        await reader.read(1)  # the next request's first byte: drop it unanswered

    async with raw_server(handler) as (url, _), StreamPool(url, {}) as pool:
        assert await pool.post(b"{}", Exchange(), 5.0) == 200
        with pytest.raises(StreamError) as err:
            await pool.post(b"{}", Exchange(), 5.0)
        assert err.value.stale  # reused, and not one response byte came back
        assert await pool.post(b"{}", Exchange(), 5.0) == 200  # a fresh connection


def test_only_http_urls() -> None:
    with pytest.raises(ValueError, match="not an http"):
        StreamPool("ftp://h/x", {})
    assert StreamPool("https://h/v1/x?a=1", {}).head.startswith(b"POST /v1/x?a=1 HTTP/1.1")
    assert StreamPool("https://h/v1", {}).port == 443


async def test_a_server_that_closes_after_each_response_stops_reuse() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        await reader.read(1)  # then close unannounced, as llama-server does after a stream

    stale = 0
    async with raw_server(handler) as (url, conns), StreamPool(url, {}) as pool:
        for _ in range(6):
            while True:
                try:
                    assert await pool.post(b"{}", Exchange(), 5.0) == 200
                    break
                except StreamError as exc:
                    assert exc.stale
                    stale += 1
    assert stale == 1 and not pool.reuse  # one failed attempt taught the pool
    assert len(conns) == 6  # the stale attempt went out on the first one, reused
