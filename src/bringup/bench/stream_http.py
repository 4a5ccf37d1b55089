"""A lean keep-alive HTTP/1.1 client for streamed POSTs, stamping body bytes on arrival.

Why by hand: aiohttp builds request and response objects, header multidicts, URLs, trace
hooks and timers for every request. In a closed loop hundreds of streams end together,
their next requests go out back to back, and every event that arrives meanwhile is stamped
late by the whole burst (measured: 30-50 ms stalls at 256 streams, some 120-200 µs per
request). No maintained library offers a streaming POST whose body pieces are stamped with
the kernel's receive time at a few µs per request, so this module reads the socket itself
and parses the response with httptools (the llhttp binding uvicorn uses); the request head
is built once per pool. Everything else in bringup talks HTTP through aiohttp.

A :class:`StreamPool` holds idle connections to one URL. :meth:`StreamPool.post` sends one
body and fills an :class:`Exchange`: ``left``, the moment the request's last byte was
handed to the kernel (``sock.send`` returned), and ``(arrival, bytes)`` for every decoded
body piece. Plain http connections are non-blocking sockets read with ``recvmsg`` from a
loop reader (asyncio protocols never show ``recvmsg``'s ancillary data): on Linux each read
carries the kernel's receive time of its last segment (:mod:`bringup.bench.arrival`), so a
client that reads late still times the bytes when they came. Elsewhere, and on https (TLS
through an asyncio protocol), a read is stamped with the client's own clock when it runs.
``StreamPool.arrival_clock`` says which: ``kernel``, ``client`` or ``mixed``.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

from bringup.bench.arrival import ANC_BUFSIZE, KernelClock, enable_kernel_stamps
from bringup.bench.records import now
from bringup.bench.stall import StallWatch, await_progress

_BUFSIZE = 1 << 18  # large reads: one wake-up drains whatever queued meanwhile


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


@dataclass(slots=True)
class Exchange:
    """What one :meth:`StreamPool.post` leaves behind, also when it fails."""

    reads: list[tuple[float, bytes]] = field(default_factory=list)  # (arrival, body piece)
    left: float = 0.0  # when the last request byte was handed to the kernel; 0: it never was


class _Connection:
    """One connection's request/response life; subclasses move the bytes."""

    clock = "client"  # what stamps this connection's reads: "kernel" or "client"

    def __init__(self) -> None:
        self.closed = False
        self.reused = False
        self.idle_since = 0.0
        self.keep_alive = False
        self._exchange: Exchange | None = None
        self._reads: list[tuple[float, bytes]] | None = None
        self._done: asyncio.Future[int] | None = None
        self._parser: httptools.HttpResponseParser | None = None
        self._stamp = 0.0
        self._got_bytes = False
        self._headers_done = False
        self._framed = False  # Content-Length or chunked: the end is in the stream itself

    # ------------------------------------------------------------ bytes in, from subclasses

    def _feed(self, stamp: float, data: bytes | memoryview) -> None:
        self._stamp = stamp
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

    def _lost(self, exc: Exception | None) -> None:
        self.closed = True
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

    def start(self, payload: bytes, exchange: Exchange) -> asyncio.Future[int]:
        self._exchange = exchange
        self._reads = exchange.reads
        exchange.left = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._got_bytes = self._headers_done = self._framed = False
        self.keep_alive = False
        self._done = asyncio.get_running_loop().create_future()
        self._send(payload)
        return self._done

    def _sent(self) -> None:
        """The request's last byte is with the kernel: the request has left."""
        if self._exchange is not None:
            self._exchange.left = now()

    def _send(self, payload: bytes) -> None:
        raise NotImplementedError

    def _shut(self) -> None:
        raise NotImplementedError

    def _finish(self) -> None:
        done, parser = self._done, self._parser
        self._reads = self._exchange = None
        self._parser = None
        if done is not None and not done.done() and parser is not None:
            done.set_result(parser.get_status_code())

    def _fail(self, exc: StreamError) -> None:
        done = self._done
        self._reads = self._exchange = None
        self._parser = None
        if done is not None and not done.done():
            done.set_exception(exc)

    def _abort(self) -> None:
        self.closed = True
        self._shut()

    def retire(self) -> None:
        """Close a connection whose response ended and that may not be reused."""
        self.closed = True
        self._shut()

    def abandon(self) -> None:
        """Drop the request in flight (timeout or cancellation); the connection is closed."""
        self._reads = self._exchange = None
        self._parser = None
        self._abort()


class _SocketConnection(_Connection):
    """Plain TCP on a non-blocking socket, read from a loop reader into one reused buffer."""

    def __init__(
        self, sock: socket.socket, loop: asyncio.AbstractEventLoop, kernel: KernelClock | None
    ) -> None:
        super().__init__()
        self._sock: socket.socket | None = sock
        self._fd = sock.fileno()
        self._loop = loop
        self._kernel = kernel
        self._buf = bytearray(_BUFSIZE)
        self._bufs = [self._buf]
        self._view = memoryview(self._buf)
        self._out: memoryview | None = None  # the rest of a request the kernel did not take
        if kernel is not None and enable_kernel_stamps(sock):
            self.clock = "kernel"
            loop.add_reader(self._fd, self._read_stamped)
        else:
            loop.add_reader(self._fd, self._read_plain)

    def _read_stamped(self) -> None:
        sock, kernel = self._sock, self._kernel
        assert sock is not None and kernel is not None
        try:
            n, anc, _, _ = sock.recvmsg_into(self._bufs, ANC_BUFSIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._gone(exc)
            return
        if not n:
            self._gone(None)
            return
        t = now()
        # httptools reads a memoryview in place; body pieces come out as their own bytes
        self._feed(kernel.arrival(anc[0][2], t) if anc else t, self._view[:n])

    def _read_plain(self) -> None:
        assert self._sock is not None
        try:
            n = self._sock.recv_into(self._buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._gone(exc)
            return
        if not n:
            self._gone(None)
            return
        self._feed(now(), self._view[:n])

    def _gone(self, exc: Exception | None) -> None:
        self._shut()
        self._lost(exc)

    def _send(self, payload: bytes) -> None:
        assert self._sock is not None
        try:
            n = self._sock.send(payload)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            self._gone(exc)
            return
        if n == len(payload):
            self._sent()
            return
        self._out = memoryview(payload)[n:]
        self._loop.add_writer(self._fd, self._write_rest)

    def _write_rest(self) -> None:
        out, sock = self._out, self._sock
        assert out is not None and sock is not None
        try:
            n = sock.send(out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._gone(exc)
            return
        if n < len(out):
            self._out = out[n:]
            return
        self._out = None
        self._loop.remove_writer(self._fd)
        self._sent()

    def _shut(self) -> None:
        sock, self._sock = self._sock, None
        if sock is None:
            return
        self._loop.remove_reader(self._fd)
        if self._out is not None:
            self._loop.remove_writer(self._fd)
            self._out = None
        sock.close()


class _TlsConnection(_Connection, asyncio.Protocol):
    """https through an asyncio transport; reads are stamped when the callback runs."""

    def __init__(self) -> None:
        super().__init__()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self._feed(now(), data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self._lost(exc)

    def _send(self, payload: bytes) -> None:
        assert self.transport is not None
        self.transport.write(payload)  # tries the socket at once; the rest is buffered
        self._sent()

    def _shut(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class StreamPool:
    """Idle keep-alive connections to one URL, and the request head that goes with them.

    ``kernel_stamps=False`` stamps every read with the client's own clock (the fallback of
    platforms without kernel receive stamps, kept for comparison).
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        ssl_context: ssl.SSLContext | None = None,
        kernel_stamps: bool = True,
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
        # the realtime-to-monotonic offset of this pool's run, measured once, here
        self.kernel = KernelClock() if kernel_stamps and not tls else None
        self._clocks: set[str] = set()
        self._addresses: list[tuple[Any, Any, int, str, Any]] | None = None

    @property
    def arrival_clock(self) -> str:
        """What stamped the reads so far: ``kernel``, ``client``, ``mixed`` (or ``none``)."""
        if len(self._clocks) > 1:
            return "mixed"
        return next(iter(self._clocks), "none")

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            if self.ssl is not None:
                _, tls = await loop.create_connection(
                    _TlsConnection, self.host, self.port, ssl=self.ssl
                )
                conn: _Connection = tls
            else:
                conn = _SocketConnection(await self._open_socket(loop), loop, self.kernel)
        except (OSError, ssl.SSLError) as exc:
            msg = f"cannot connect to {self.host}:{self.port}: {exc}"
            raise StreamError("connect", msg) from exc
        self._clocks.add(conn.clock)
        self._all.add(conn)
        return conn

    async def _open_socket(self, loop: asyncio.AbstractEventLoop) -> socket.socket:
        if self._addresses is None:  # resolved once per pool: a lookup is a thread hop
            self._addresses = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        error: OSError = OSError(f"no address for {self.host}")
        for family, kind, proto, _, addr in self._addresses:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                await loop.sock_connect(sock, addr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            except BaseException:  # cancelled or timed out mid-connect
                sock.close()
                raise
            return sock
        raise error

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
        exchange: Exchange,
        timeout_s: float,
        watch: StallWatch | None = None,
    ) -> int:
        """Send ``body``; stream the response body into ``exchange``; return the HTTP status.

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
        done = conn.start(payload, exchange)
        try:
            async with asyncio.timeout_at(_loop_time(deadline)):
                progress = done if watch is None else await_progress(done, exchange.reads, watch)
                status = await progress
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
