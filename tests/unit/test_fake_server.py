"""The fake OpenAI-compatible server: stream shape, stamps, usage modes, tokenizer, stats."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time

import aiohttp
import orjson
import pytest

from bringup.bench.arrival import kernel_stamps_offered
from bringup.bench.records import now
from bringup.testing.fakeserver import (
    FakeServer,
    FakeServerConfig,
    FakeServerProcess,
    expected_events,
)


async def _stream(url: str, body: dict[str, object]) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    async with aiohttp.ClientSession() as s, s.post(url, json=body) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "text/event-stream"
        raw = await resp.read()
    for block in raw.split(b"\n\n"):
        if block.startswith(b"data: "):
            payload = block[6:]
            events.append({"done": True} if payload == b"[DONE]" else orjson.loads(payload))
    return events


async def test_completion_stream_has_stamped_events_usage_and_done() -> None:
    async with FakeServer(FakeServerConfig(event_rate=500, tokens_per_event=3)) as srv:
        before = time.monotonic()
        events = await _stream(
            f"{srv.url}/v1/completions", {"prompt": "x", "max_tokens": 10, "stream": True}
        )
        after = time.monotonic()
    assert events[-1] == {"done": True}
    content = events[:-1]
    assert len(content) == expected_events(10, 3) == 4
    stamps = [e["t_send"] for e in content]
    assert all(isinstance(t, float) and before <= t <= after for t in stamps)
    assert stamps == sorted(stamps)
    # llama-server style: usage on the finishing chunk
    assert content[-1]["usage"]["completion_tokens"] == 10  # type: ignore[index]
    assert content[-1]["choices"][0]["finish_reason"] == "length"  # type: ignore[index]
    text = "".join(e["choices"][0]["text"] for e in content)  # type: ignore[index]
    assert len(text.split()) == 10


async def test_openai_usage_mode_sends_usage_only_when_asked_in_a_separate_chunk() -> None:
    cfg = FakeServerConfig(event_rate=1000, usage="include_usage")
    async with FakeServer(cfg) as srv:
        url = f"{srv.url}/v1/chat/completions"
        msgs = [{"role": "user", "content": "hi"}]
        plain = await _stream(url, {"messages": msgs, "max_tokens": 3, "stream": True})
        asked = await _stream(
            url,
            {
                "messages": msgs,
                "max_tokens": 3,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        )
    assert not any("usage" in e for e in plain)
    assert asked[-2]["choices"] == [] and asked[-2]["usage"]["completion_tokens"] == 3  # type: ignore[index]
    assert asked[0]["choices"][0]["delta"]["content"].strip()  # type: ignore[index]


async def test_eos_stops_early_unless_ignore_eos_and_rejects_named_fields() -> None:
    async with FakeServer(
        FakeServerConfig(event_rate=1000, eos_after=2, reject_fields=["bogus"])
    ) as srv:
        url = f"{srv.url}/v1/completions"
        short = await _stream(url, {"prompt": "x", "max_tokens": 5, "stream": True})
        full = await _stream(
            url, {"prompt": "x", "max_tokens": 5, "stream": True, "ignore_eos": True}
        )
        async with (
            aiohttp.ClientSession() as s,
            s.post(url, json={"prompt": "x", "bogus": 1}) as resp,
        ):
            assert resp.status == 400
    assert short[-2]["usage"]["completion_tokens"] == 2  # type: ignore[index]
    assert full[-2]["usage"]["completion_tokens"] == 5  # type: ignore[index]


async def test_tokenizer_round_trip_models_and_stats() -> None:
    async with FakeServer() as srv, aiohttp.ClientSession() as s:
        async with s.post(f"{srv.url}/tokenize", json={"content": "a b a c"}) as r:
            tokens = (await r.json())["tokens"]
        assert tokens[0] == tokens[2] and len(tokens) == 4
        async with s.post(f"{srv.url}/detokenize", json={"tokens": tokens}) as r:
            assert (await r.json())["content"] == "a b a c"
        async with s.get(f"{srv.url}/v1/models") as r:
            assert (await r.json())["data"][0]["id"] == "fake-model"
        async with s.get(f"{srv.url}/nope") as r:
            assert r.status == 404
        await _stream(f"{srv.url}/v1/completions", {"prompt": "x", "max_tokens": 4, "stream": True})
        async with s.get(f"{srv.url}/stats") as r:
            stats = await r.json()
        assert stats["events"] == 4 and stats["requests"] == 1 and stats["active"] == 0


async def test_keep_alive_serves_several_requests_on_one_connection() -> None:
    async with FakeServer(FakeServerConfig(event_rate=2000)) as srv:
        conn = aiohttp.TCPConnector(limit=1)
        async with aiohttp.ClientSession(connector=conn) as s:
            for _ in range(3):
                async with s.post(
                    f"{srv.url}/v1/completions",
                    json={"prompt": "x", "max_tokens": 2, "stream": True},
                ) as r:
                    assert (await r.read()).endswith(b"data: [DONE]\n\n")
        assert srv.stats.requests == 3


def test_process_runner_starts_serves_and_stops() -> None:
    with FakeServerProcess(FakeServerConfig(event_rate=100)) as fake:
        assert fake.port > 0
        assert fake.stats()["events"] == 0
        pid = fake.pid
    assert fake.proc is not None and fake.proc.returncode is not None
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)


async def test_stall_after_events_goes_silent_with_health_200() -> None:
    cfg = FakeServerConfig(event_rate=200, stall_after_events=3, stall_after_requests=1)
    async with FakeServer(cfg) as srv:
        body = {"prompt": "x", "max_tokens": 10, "stream": True}
        first = await _stream(f"{srv.url}/v1/completions", body)  # request 1: whole
        assert first[-1] == {"done": True}
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{srv.url}/v1/completions", json=body) as resp:
                got = b""
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.5):
                        async for piece in resp.content.iter_any():
                            got += piece
            async with s.get(f"{srv.url}/health") as health:
                assert health.status == 200
    assert got.count(b"data: ") == 3


@pytest.mark.parametrize("kernel", [False, True])
async def test_request_arrival_is_stamped_by_the_kernel_when_asked(kernel: bool) -> None:
    """A request sent while the server's loop is held: t_recv says when it came (kernel)."""
    if kernel and not kernel_stamps_offered():
        pytest.skip("no kernel receive stamps here")
    hold_s = 0.3
    cfg = FakeServerConfig(event_rate=500, kernel_stamps=kernel)
    async with FakeServer(cfg) as srv:
        sock = socket.create_connection(("127.0.0.1", srv.port))
        await asyncio.sleep(0.05)  # accepted
        body = orjson.dumps({"prompt": "x", "max_tokens": 2, "stream": True})
        head = b"POST /v1/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body)
        sent: list[float] = []
        thread = threading.Thread(target=lambda: (sock.sendall(head + body), sent.append(now())))
        thread.start()
        thread.join(10)
        time.sleep(hold_s)  # the server's loop is held: it reads the request only after this
        held_until = now()
        raw = b""
        sock.setblocking(False)
        while b"[DONE]" not in raw:
            await asyncio.sleep(0.01)
            with contextlib.suppress(BlockingIOError):
                raw += sock.recv(65536)
        sock.close()
    first = orjson.loads(raw.split(b"data: ", 1)[1].split(b"\n\n", 1)[0])
    if kernel:
        assert first["t_recv"] <= sent[0] + 0.002  # by the time sendall returned
    else:
        assert first["t_recv"] >= held_until  # when the loop got to it
