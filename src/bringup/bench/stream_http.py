"""A lean keep-alive HTTP/1.1 client for streamed POSTs, stamping body bytes on receipt.

Why by hand: aiohttp builds request and response objects, header multidicts, URLs, trace
hooks and timers for every request. In a closed loop hundreds of streams end together,
their next requests go out back to back, and every event that arrives meanwhile is stamped
late by the whole burst (measured: 30-50 ms stalls at 256 streams, some 120-200 µs per
request). No maintained library offers a streaming POST whose body pieces are stamped inside
the socket callback at a few µs per request, so this module is one asyncio protocol per
connection with the response parsed by httptools (the llhttp binding uvicorn uses); the
request head is built once per pool. Everything else in bringup talks HTTP through aiohttp.

A :class:`StreamPool` holds idle connections to one URL. :meth:`StreamPool.post` sends one
body and appends ``(monotonic(), bytes)`` for every decoded body piece to the caller's list;
the stamp is taken once per socket read, before any parsing.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from typing import cast
from urllib.parse import urlsplit

import httptools

from bringup.bench.records import now
from bringup.bench.stall import StallWatch, await_progress


def server_address(url: str) -> tuple[str, int, bool]:
    """``(host, port, tls)`` of an http(s) URL; ``ValueError`` for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    tls = parts.scheme == "https"
    return parts.hostname, parts.port or (443 if tls else 80), tls


class StreamError(Exception):
    """A request that got no complete response; ``kind`` names why for the error tally.

    ``stale`` is set when a reused idle connection turned out closed before any response
    byte: the server never answered, so the request may be sent again on a fresh one.
    """

    def __init__(self, kind: str, detail: str, *, stale: bool = False) -> None:
        super().__init__(detail)
        self.kind = kind
        self.stale = stale


class _Connection(asyncio.Protocol):
    """One TCP connection; carries at most one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self.idle_since = 0.0
        self.keep_alive = False
        self._reads: list[tuple[float, bytes]] | None = None
        self._done: asyncio.Future[int] | None = None
        self._parser: httptools.HttpResponseParser | None = None
        self._stamp = 0.0
        self._got_bytes = False
        self._headers_done = False
        self._framed = False  # Content-Length or chunked: the end is in the stream itself

    # ------------------------------------------------------------ asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self._stamp = now()
        self._got_bytes = True
        parser = self._parser
        if parser is None:  # bytes nobody asked for: the connection is unusable
            self._abort()
            return
        try:
            parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(StreamError("client_error", f"bad HTTP response: {exc}"))
            self._abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.transport = None
        if self._done is None or self._done.done():
            return
        if self._headers_done and not self._framed:  # a body delimited by the close
            self._finish()
            return
        if not self._got_bytes:
            err = StreamError(
                "disconnect",
                f"connection closed before any response byte ({exc or 'EOF'})",
                stale=self.reused,
            )
        else:
            err = StreamError("disconnect", f"connection closed mid-response ({exc or 'EOF'})")
        self._fail(err)

    # ------------------------------------------------------------ httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.lower()
        if key == b"content-length" or (key == b"transfer-encoding" and b"chunked" in value):
            self._framed = True

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        if self._reads is not None:
            self._reads.append((self._stamp, body))

    def on_message_complete(self) -> None:
        assert self._parser is not None
        self.keep_alive = self._parser.should_keep_alive()
        self._finish()

    # ------------------------------------------------------------ request life

    def start(self, payload: bytes, reads: list[tuple[float, bytes]]) -> asyncio.Future[int]:
        assert self.transport is not None
        self._reads = reads
        self._parser = httptools.HttpResponseParser(self)
        self._got_bytes = self._headers_done = self._framed = False
        self.keep_alive = False
        self._done = asyncio.get_running_loop().create_future()
        self.transport.write(payload)
        return self._done

    def _finish(self) -> None:
        done, parser = self._done, self._parser
        self._reads = None
        self._parser = None
        if done is not None and not done.done() and parser is not None:
            done.set_result(parser.get_status_code())

    def _fail(self, exc: StreamError) -> None:
        done = self._done
        self._reads = None
        self._parser = None
        if done is not None and not done.done():
            done.set_exception(exc)

    def _abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def retire(self) -> None:
        """Close a connection whose response ended and that may not be reused."""
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def abandon(self) -> None:
        """Drop the request in flight (timeout or cancellation); the connection is closed."""
        self._reads = None
        self._parser = None
        self._abort()


class StreamPool:
    """Idle keep-alive connections to one URL, and the request head that goes with them."""

    def __init__(
        self, url: str, headers: Mapping[str, str], *, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        parts = urlsplit(url)
        self.host, self.port, tls = server_address(url)
        self.ssl: ssl.SSLContext | None = None
        if tls:
            self.ssl = ssl_context or ssl.create_default_context()
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = parts.netloc.rpartition("@")[2]
        lines = [f"POST {target} HTTP/1.1", f"Host: {host}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self.reuse = True  # off once the server is seen closing connections right after use

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(_Connection, self.host, self.port, ssl=self.ssl)
        except (OSError, ssl.SSLError) as exc:
            msg = f"cannot connect to {self.host}:{self.port}: {exc}"
            raise StreamError("connect", msg) from exc
        self._all.add(conn)
        return conn

    def _take(self) -> _Connection | None:
        while self._idle:
            conn = self._idle.pop()  # the most recently used: least likely to be stale
            if not conn.closed:
                conn.reused = True
                return conn
            self._all.discard(conn)
        return None

    async def post(
        self,
        body: bytes,
        reads: list[tuple[float, bytes]],
        timeout_s: float,
        watch: StallWatch | None = None,
    ) -> int:
        """Send ``body``; stream the response body into ``reads``; return the HTTP status.

        Raises :class:`StreamError` (``connect``, ``disconnect``, ``client_error``),
        ``TimeoutError`` once ``timeout_s`` has passed since the call, or, with a ``watch``,
        :class:`~bringup.bench.stall.StallError` when the body stops arriving.
        """
        deadline = now() + max(timeout_s, 0.0)
        conn = self._take()
        if conn is None:
            async with asyncio.timeout_at(_loop_time(deadline)):
                conn = await self._connect()
        payload = self.head + b"%d\r\n\r\n" % len(body) + body
        done = conn.start(payload, reads)
        try:
            async with asyncio.timeout_at(_loop_time(deadline)):
                status = await (done if watch is None else await_progress(done, reads, watch))
        except BaseException as exc:
            conn.abandon()
            self._all.discard(conn)
            if isinstance(exc, StreamError) and exc.stale and now() - conn.idle_since < 1.0:
                # closed within a second of its last response without saying so (llama-server
                # does this after every stream): reusing would only cost a failed attempt
                self.reuse = False
            raise
        if self.reuse and conn.keep_alive and not conn.closed:
            conn.idle_since = now()
            self._idle.append(conn)
        else:
            conn.retire()
            self._all.discard(conn)
        return status

    async def close(self) -> None:
        for conn in list(self._all):
            conn.abandon()
        self._all.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports run their close callbacks

    async def __aenter__(self) -> StreamPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _loop_time(deadline: float) -> float:
    """``deadline`` on :func:`now`'s clock as a time on the running loop's clock."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - now())
