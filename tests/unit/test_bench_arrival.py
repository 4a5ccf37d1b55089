"""Arrival times from the kernel, on real loopback sockets, with the client's loop held up.

A server thread answers with plain blocking sockets, so it keeps sending while the test
blocks the event loop (the GIL is free during ``time.sleep``): the client reads late, and
the read's kernel stamp must still say when the bytes came, not when they were read.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from bringup.bench import arrival
from bringup.bench.arrival import KernelClock, kernel_stamps_offered
from bringup.bench.records import RequestRecord, now, parse_stream
from bringup.bench.stream_http import Exchange, StreamPool

HOLD_S = 0.3  # how long the client's loop is held up before it reads

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def event(text: str, finish: str = "null") -> bytes:
    fin = finish if finish == "null" else f'"{finish}"'
    return b'data: {"choices":[{"index":0,"text":"%s","finish_reason":%s}]}\n\n' % (
        text.encode(),
        fin.encode(),
    )


def read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += conn.recv(65536)


@contextmanager
def thread_server(script: Callable[[socket.socket], None]) -> Iterator[str]:
    """A one-connection loopback server running ``script`` on its own thread."""
    lsock = socket.create_server(("127.0.0.1", 0))
    port = lsock.getsockname()[1]
    errors: list[BaseException] = []

    def run() -> None:
        try:
            conn, _ = lsock.accept()
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                script(conn)
        except BaseException as exc:  # surfaced in the test below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1/completions"
    finally:
        thread.join(10)
        lsock.close()
    assert not errors, errors


async def _post_and_hold(pool: StreamPool, ex: Exchange, sent: threading.Event) -> float:
    """Post, hold the loop up until the server has sent and ``HOLD_S`` passed; the read time."""
    task = asyncio.create_task(pool.post(b"{}", ex, 10.0))
    while not ex.left:
        await asyncio.sleep(0.001)
    assert sent.wait(10)
    time.sleep(HOLD_S)  # the loop is held: nothing is read until this returns
    held_until = now()
    assert await task == 200
    return held_until


def _script(stamps: list[float], sent: threading.Event) -> Callable[[socket.socket], None]:
    def script(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(HEAD)
        time.sleep(0.05)
        stamps.append(now())
        conn.sendall(chunk(event(" a")))
        stamps.append(now())
        sent.set()
        time.sleep(HOLD_S + 0.2)  # the end comes once the client reads again
        conn.sendall(chunk(event(" b", "length") + b"data: [DONE]\n\n") + b"0\r\n\r\n")

    return script


@pytest.mark.skipif(not kernel_stamps_offered(), reason="no kernel receive stamps here")
async def test_a_late_read_is_stamped_with_the_kernels_arrival_time() -> None:
    stamps: list[float] = []
    sent = threading.Event()
    with thread_server(_script(stamps, sent)) as url:
        async with StreamPool(url, {}) as pool:
            ex = Exchange()
            held_until = await _post_and_hold(pool, ex, sent)
            assert pool.arrival_clock == "kernel"
            slack = max(0.002, 2 * pool.kernel.bracket_ns * 1e-9) if pool.kernel else 0.0
    first = ex.reads[0][0]
    before, after = stamps
    # between the server's stamps around its send, though the client read it HOLD_S later
    assert before - slack <= first <= after + slack
    assert held_until - first > HOLD_S * 0.9


async def test_without_kernel_stamps_a_read_is_stamped_when_the_client_gets_to_it() -> None:
    stamps: list[float] = []
    sent = threading.Event()
    with thread_server(_script(stamps, sent)) as url:
        async with StreamPool(url, {}, kernel_stamps=False) as pool:
            ex = Exchange()
            held_until = await _post_and_hold(pool, ex, sent)
            assert pool.arrival_clock == "client"
    assert ex.reads[0][0] >= held_until  # the fallback: the client's own, late, clock


async def test_a_platform_without_kernel_stamps_falls_back_to_the_clients_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(arrival, "kernel_stamps_offered", lambda: False)
    s = socket.socket()
    try:
        assert not arrival.enable_kernel_stamps(s)
    finally:
        s.close()
    stamps: list[float] = []
    sent = threading.Event()
    with thread_server(_script(stamps, sent)) as url:
        async with StreamPool(url, {}) as pool:
            ex = Exchange()
            held_until = await _post_and_hold(pool, ex, sent)
            assert pool.arrival_clock == "client"
    assert ex.reads[0][0] >= held_until


def test_kernel_clock_maps_realtime_to_monotonic() -> None:
    clock = KernelClock()
    real = time.time_ns()
    stamp = struct.pack("=qq", real // 1_000_000_000, real % 1_000_000_000)  # a timespec
    t = clock.arrival(stamp, now() + 10.0)
    assert abs(t - now()) < 0.5  # the same instant on the other clock (busy-machine margin)
    assert clock.arrival(stamp, 1.0) == 1.0  # never after the read itself


@pytest.mark.skipif(not kernel_stamps_offered(), reason="no kernel receive stamps here")
async def test_events_of_one_late_read_are_coalesced_and_give_no_itl_between_them() -> None:
    sent = threading.Event()

    def script(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(HEAD + chunk(event(" a")))
        time.sleep(0.05)
        conn.sendall(chunk(event(" b")))
        time.sleep(0.05)
        conn.sendall(chunk(event(" c")))  # b and c queue up while the client is held
        sent.set()
        time.sleep(HOLD_S + 0.2)
        conn.sendall(chunk(event(" d", "length") + b"data: [DONE]\n\n") + b"0\r\n\r\n")

    with thread_server(script) as url:
        async with StreamPool(url, {}) as pool:
            ex = Exchange()
            task = asyncio.create_task(pool.post(b"{}", ex, 10.0))
            while not ex.reads:  # " a" read on time
                await asyncio.sleep(0.001)
            assert sent.wait(10)
            time.sleep(HOLD_S)
            assert await task == 200
    rec = RequestRecord(index=0, scheduled=0.0, sent=ex.left, left=ex.left)
    parse_stream(rec, ex.reads)
    assert rec.ok and rec.text == " a b c d"
    assert rec.event_reads[1] == rec.event_reads[2]  # b and c came in one read
    assert rec.coalesced() == 1
    itls = rec.itls()
    assert len(itls) == 3 and min(itls) > 0  # b and c share the gap since a: no zero ITL
    assert itls[0] == itls[1]


async def test_a_request_leaves_when_its_last_byte_is_with_the_kernel() -> None:
    body = b"x" * (16 << 20)  # far more than the socket buffers hold: send() blocks
    release = threading.Event()
    got: list[float] = []

    def script(conn: socket.socket) -> None:
        release.wait(10)
        read_request(conn)
        got.append(now())
        conn.sendall(HEAD + chunk(event(" a", "length") + b"data: [DONE]\n\n") + b"0\r\n\r\n")

    with thread_server(script) as url:
        async with StreamPool(url, {}) as pool:
            ex = Exchange()
            set_out = now()
            task = asyncio.create_task(pool.post(body, ex, 20.0))
            await asyncio.sleep(HOLD_S)
            assert not ex.left  # still stuck in the client: it has not left
            release.set()
            assert await task == 200
    assert ex.left - set_out >= HOLD_S
    assert ex.left <= got[0] + 0.5  # by the time the server had read it all (busy margin)
