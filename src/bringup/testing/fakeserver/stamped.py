"""Serve the fake server's connections over sockets whose reads carry the kernel's stamps.

With ``FakeServerConfig(kernel_stamps=True)`` the server accepts and reads its sockets
itself (a loop reader and ``recvmsg``, as the benchmark client does, see
:mod:`bringup.bench.stream_http`), so a request's ``t_recv`` is when its bytes reached this
host, not when the server's loop got round to them: a burst of events being written must
not count as the client's delay. :class:`StampedTransport` is just enough of an asyncio
transport (``write``, ``close``, ``abort``) for the server's protocol; it sets
``protocol.arrival`` before each ``data_received``.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any, Protocol

from bringup.bench.arrival import ANC_BUFSIZE, KernelClock, enable_kernel_stamps
from bringup.bench.records import now


class StampedProtocol(Protocol):
    arrival: float | None

    def connection_made(self, transport: Any) -> None: ...  # a duck-typed transport
    def data_received(self, data: bytes) -> None: ...
    def connection_lost(self, exc: Exception | None) -> None: ...


class StampedTransport:
    """One accepted socket: reads stamped by the kernel, writes buffered when it is full."""

    def __init__(
        self,
        sock: socket.socket,
        loop: asyncio.AbstractEventLoop,
        protocol: StampedProtocol,
        clock: KernelClock,
    ) -> None:
        self._sock: socket.socket | None = sock
        self._fd = sock.fileno()
        self._loop = loop
        self._protocol = protocol
        self._clock = clock
        self._stamped = enable_kernel_stamps(sock)
        self._out = bytearray()
        self._closing = False
        protocol.connection_made(self)
        loop.add_reader(self._fd, self._read)

    def _read(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            data, anc, _, _ = sock.recvmsg(1 << 16, ANC_BUFSIZE if self._stamped else 0)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._shut(exc)
            return
        if not data:
            self._shut(None)
            return
        t = now()
        self._protocol.arrival = self._clock.arrival(anc[0][2], t) if anc else t
        self._protocol.data_received(data)

    def write(self, data: bytes) -> None:
        sock = self._sock
        if sock is None:
            return
        if self._out:
            self._out += data
            return
        try:
            n = sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            self._shut(exc)
            return
        if n < len(data):
            self._out += data[n:]
            self._loop.add_writer(self._fd, self._flush)

    def _flush(self) -> None:
        sock = self._sock
        if sock is None:
            return
        try:
            n = sock.send(self._out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._shut(exc)
            return
        del self._out[:n]
        if not self._out:
            self._loop.remove_writer(self._fd)
            if self._closing:
                self._shut(None)

    def close(self) -> None:
        """Close once what was written has gone out."""
        if self._out:
            self._closing = True
        else:
            self._shut(None)

    def abort(self) -> None:
        self._shut(None)

    def _shut(self, exc: Exception | None) -> None:
        sock, self._sock = self._sock, None
        if sock is None:
            return
        self._loop.remove_reader(self._fd)
        if self._out:
            self._loop.remove_writer(self._fd)
        sock.close()
        self._protocol.connection_lost(exc)


class StampedServer:
    """A listening socket whose accepted connections get :class:`StampedTransport`."""

    def __init__(self, host: str, port: int, factory: Callable[[], StampedProtocol]) -> None:
        self._factory = factory
        self._loop = asyncio.get_running_loop()
        self._clock = KernelClock()
        self._lsock = socket.create_server((host, port), backlog=1024)
        self._lsock.setblocking(False)
        self.port: int = self._lsock.getsockname()[1]
        self._loop.add_reader(self._lsock.fileno(), self._accept)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # e.g. out of descriptors: the client sees a refused connection
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            protocol = self._factory()
            StampedTransport(sock, self._loop, protocol, self._clock)

    def close(self) -> None:
        self._loop.remove_reader(self._lsock.fileno())
        self._lsock.close()
