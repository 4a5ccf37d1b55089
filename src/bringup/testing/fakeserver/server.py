"""A fake OpenAI-compatible streaming server on a bare asyncio protocol.

Each streamed request gets its own schedule: the first event ``ttft_s`` after the request
arrives, then one event every ``1 / event_rate`` seconds, each carrying
``tokens_per_event`` words as tokens. Every event carries ``"t_send"``, the
``time.monotonic()`` taken just before the write, so a client on the same host can measure
its own lag (arrival minus send); the first also carries ``"t_recv"``, when the request's
bytes reached the server, so that the server's own TTFT (first ``t_send`` minus
``t_recv``) is the truth a client's TTFT can be held against. The protocol is hand-written
(HTTP/1.1 keep-alive, chunked bodies) so that one core serves thousands of events per
second without becoming the bottleneck it is used to measure; ``GET /stats`` says how late
the server itself was.

Endpoints: ``GET /health``, ``GET /v1/models``, ``POST /v1/completions``,
``POST /v1/chat/completions``, ``POST /tokenize`` and ``/detokenize`` (one word = one token),
``GET /stats`` and ``POST /stats/reset``.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Any, cast

import orjson

from bringup.bench.arrival import kernel_stamps_offered
from bringup.testing.fakeserver.stamped import StampedServer

_WORD_TEXT = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
)
_WORDS = tuple(_WORD_TEXT.split())


@dataclass
class FakeServerConfig:
    event_rate: float = 50.0  # events per second per stream
    tokens_per_event: int = 1
    ttft_s: float = 0.0
    model: str = "fake-model"
    usage: str = "last_chunk"  # "last_chunk" (llama-server) or "include_usage" (vLLM/SGLang)
    eos_after: int | None = None  # stop early at this many tokens unless ignore_eos is set
    reject_fields: list[str] = field(default_factory=list)  # answer 400 when the body has one
    fail_every: int = 0  # answer 500 to every n-th completion request (0: never)
    drop_after_events: int = 0  # cut the connection after this many events (0: never)
    # close after each stream, unannounced (llama-server); a request that asks for
    # ``Connection: close`` is answered with that header, as llama-server's HTTP layer does
    close_after_stream: bool = False
    # go silent mid-stream (connection open, /health 200) after this many events (0: never),
    # in every stream after the first stall_after_requests streams
    stall_after_events: int = 0
    stall_after_requests: int = 0
    tokenizer: bool = True
    stamp: bool = True
    # read requests with the kernel's receive stamps (see .stamped), so that t_recv is when
    # a request reached the host even while the server is busy writing a burst of events
    kernel_stamps: bool = False


class _Stats:
    def __init__(self) -> None:
        self.active = 0  # streams open now: a gauge, kept across resets
        self.reset()

    def reset(self) -> None:
        self.events = 0
        self.requests = 0
        self.lateness: list[float] = []  # actual - scheduled send, s (bounded sample)
        self.started = time.monotonic()

    def to_dict(self) -> dict[str, Any]:
        late = sorted(self.lateness)

        def q(p: float) -> float:
            return late[min(len(late) - 1, int(p * len(late)))] * 1000 if late else 0.0

        elapsed = time.monotonic() - self.started
        return {
            "events": self.events,
            "requests": self.requests,
            "active": self.active,
            "elapsed_s": elapsed,
            "events_per_s": self.events / elapsed if elapsed > 0 else 0.0,
            "send_lateness_p50_ms": q(0.50),
            "send_lateness_p99_ms": q(0.99),
        }


class _Vocab:
    """One word = one token; ids are handed out as words are first seen."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.words: list[str] = []

    def encode(self, text: str) -> list[int]:
        out = []
        for word in text.split():
            if word not in self.ids:
                self.ids[word] = len(self.words)
                self.words.append(word)
            out.append(self.ids[word])
        return out

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.words[i] for i in ids if 0 <= i < len(self.words))


class _Stream:
    __slots__ = (
        "chat", "done", "handle", "id", "next_at", "received", "remaining", "sent", "stalls",
        "usage",
    )  # fmt: skip

    def __init__(
        self, sid: int, tokens: int, chat: bool, usage: bool, first_at: float, received: float
    ) -> None:
        self.stalls = False
        self.id = sid
        self.received = received
        self.remaining = tokens
        self.sent = 0
        self.chat = chat
        self.usage = usage
        self.next_at = first_at
        self.handle: asyncio.TimerHandle | None = None
        self.done = False


class FakeServer:
    """The server state shared by connections; ``await start()`` binds 127.0.0.1."""

    def __init__(self, config: FakeServerConfig | None = None) -> None:
        self.config = config or FakeServerConfig()
        self.stats = _Stats()
        self.vocab = _Vocab()
        self._server: asyncio.Server | None = None
        self._stamped: StampedServer | None = None
        self._next_id = 0
        self.streams = 0  # streamed requests so far
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeServer:
        if self.config.kernel_stamps and kernel_stamps_offered():
            self._stamped = StampedServer(host, port, lambda: _Connection(self))
            self.port = self._stamped.port
            return self
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), host, port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def close(self) -> None:
        if self._stamped is not None:
            self._stamped.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def __aenter__(self) -> FakeServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


_HEAD_SSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
_HEAD_SSE_CLOSE = _HEAD_SSE[:-2] + b"Connection: close\r\n\r\n"


class _Connection(asyncio.Protocol):
    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.cfg = server.config
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.stream: _Stream | None = None
        self.loop = asyncio.get_running_loop()
        self.received = 0.0  # when the latest bytes of a request came in
        self.arrival: float | None = None  # their kernel receive time, from StampedTransport
        self.closing = False  # the request being answered asked for Connection: close

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self._end_stream()
        self.transport = None

    def data_received(self, data: bytes) -> None:
        if data:
            self.received = time.monotonic() if self.arrival is None else self.arrival
        self.buf += data
        while self.stream is None:  # one request at a time per connection
            head_end = self.buf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = bytes(self.buf[:head_end]).decode("latin-1").split("\r\n")
            length = 0
            self.closing = False
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
                elif name.strip().lower() == "connection":
                    self.closing = value.strip().lower() == "close"
            if len(self.buf) < head_end + 4 + length:
                return
            body = bytes(self.buf[head_end + 4 : head_end + 4 + length])
            del self.buf[: head_end + 4 + length]
            method, path = [*head[0].split(" "), "", ""][:2]
            self._route(method, path.split("?")[0], body)

    def _reply(self, status: int, obj: Any) -> None:
        body = orjson.dumps(obj)
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}
        head = (
            f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        if self.transport is not None:
            self.transport.write(head + body)

    def _route(self, method: str, path: str, body: bytes) -> None:
        srv = self.server
        if path in ("/health", "/v1/health"):
            return self._reply(200, {"status": "ok"})
        if path in ("/v1/models", "/models"):
            return self._reply(
                200, {"object": "list", "data": [{"id": self.cfg.model, "object": "model"}]}
            )
        if path == "/stats":
            if method == "POST":
                srv.stats.reset()
            return self._reply(200, srv.stats.to_dict())
        try:
            req = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            return self._reply(400, {"error": {"message": "body is not JSON", "code": 400}})
        if path == "/tokenize" and self.cfg.tokenizer:
            return self._reply(200, {"tokens": srv.vocab.encode(str(req.get("content", "")))})
        if path == "/detokenize" and self.cfg.tokenizer:
            return self._reply(200, {"content": srv.vocab.decode(list(req.get("tokens", [])))})
        if path in ("/v1/completions", "/v1/chat/completions"):
            return self._complete(req, chat=path.endswith("chat/completions"))
        return self._reply(404, {"error": {"message": f"no route {path}", "code": 404}})

    def _complete(self, req: dict[str, Any], chat: bool) -> None:
        cfg, stats = self.cfg, self.server.stats
        stats.requests += 1
        bad = [f for f in cfg.reject_fields if f in req]
        if bad:
            return self._reply(400, {"error": {"message": f"unknown field {bad[0]}", "code": 400}})
        if cfg.fail_every and stats.requests % cfg.fail_every == 0:
            return self._reply(500, {"error": {"message": "injected failure", "code": 500}})
        tokens = max(1, int(req.get("max_tokens") or req.get("n_predict") or 16))
        if cfg.eos_after is not None and not req.get("ignore_eos"):
            tokens = min(tokens, cfg.eos_after)
        include = bool((req.get("stream_options") or {}).get("include_usage"))
        usage = cfg.usage == "last_chunk" or include
        if not req.get("stream"):
            # a continuation, as streamed: each word after a space (the streams say the same)
            text = "".join(" " + _WORDS[i % len(_WORDS)] for i in range(tokens))
            choice = {"index": 0, "finish_reason": "length"}
            choice |= (
                {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
            )
            usage_obj = {
                "prompt_tokens": 1,
                "completion_tokens": tokens,
                "total_tokens": tokens + 1,
            }
            reply: dict[str, Any] = {
                "id": f"cmpl-{self.server.new_id()}",
                "object": "text_completion",
            }
            reply |= {"model": cfg.model, "choices": [choice], "usage": usage_obj}
            return self._reply(200, reply)
        assert self.transport is not None
        self.transport.write(_HEAD_SSE_CLOSE if self.closing else _HEAD_SSE)
        stats.active += 1
        first = time.monotonic() + cfg.ttft_s
        self.stream = _Stream(self.server.new_id(), tokens, chat, usage, first, self.received)
        self.server.streams += 1
        self.stream.stalls = bool(cfg.stall_after_events) and (
            self.server.streams > cfg.stall_after_requests
        )
        self.stream.handle = self.loop.call_at(first, self._emit)

    def _event(self, stream: _Stream, text: str, finish: str | None, usage: bool) -> bytes:
        fin = "null" if finish is None else f'"{finish}"'
        if stream.chat:
            choice = f'{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":{fin}}}'
            kind = "chat.completion.chunk"
        else:
            choice = f'{{"index":0,"text":"{text}","logprobs":null,"finish_reason":{fin}}}'
            kind = "text_completion"
        extra = ""
        if usage:
            n = stream.sent
            extra = f',"usage":{{"prompt_tokens":1,"completion_tokens":{n},"total_tokens":{n + 1}}}'
        if self.cfg.stamp:
            if stream.sent <= self.cfg.tokens_per_event:
                extra += f',"t_recv":{stream.received:.7f}'
            extra += f',"t_send":{time.monotonic():.7f}'
        return (
            f'data: {{"id":"cmpl-{stream.id}","object":"{kind}","model":"{self.cfg.model}",'
            f'"choices":[{choice}]{extra}}}\n\n'
        ).encode()

    def _emit(self) -> None:
        stream, transport = self.stream, self.transport
        if stream is None or transport is None or stream.done:
            return
        cfg, stats = self.cfg, self.server.stats
        t = time.monotonic()
        if len(stats.lateness) < 2_000_000:
            stats.lateness.append(t - stream.next_at)
        k = min(cfg.tokens_per_event, stream.remaining)
        words = " ".join(_WORDS[(stream.sent + i) % len(_WORDS)] for i in range(k))
        stream.sent += k
        stream.remaining -= k
        stats.events += 1
        if cfg.drop_after_events and stream.sent >= cfg.drop_after_events * cfg.tokens_per_event:
            self._end_stream()
            transport.abort()  # mid-stream, without the terminating chunk
            return
        if stream.remaining > 0:
            transport.write(_chunk(self._event(stream, " " + words, None, False)))
            if stream.stalls and stream.sent >= cfg.stall_after_events * cfg.tokens_per_event:
                return  # silent from here on; the connection stays open
            stream.next_at += 1.0 / cfg.event_rate
            stream.handle = self.loop.call_at(stream.next_at, self._emit)
            return
        # llama-server style: usage on the finishing chunk; OpenAI style: a usage-only chunk
        last = stream.usage and self.cfg.usage == "last_chunk"
        out = [self._event(stream, " " + words, "length", last)]
        if stream.usage and not last:
            n = stream.sent
            out.append(
                f'data: {{"id":"cmpl-{stream.id}","choices":[],"usage":{{"prompt_tokens":1,'
                f'"completion_tokens":{n},"total_tokens":{n + 1}}}}}\n\n'.encode()
            )
        out.append(b"data: [DONE]\n\n")
        transport.write(_chunk(b"".join(out)) + b"0\r\n\r\n")
        self._end_stream()
        if cfg.close_after_stream or self.closing:
            transport.close()
            return
        if self.buf:  # a request that arrived while streaming
            self.data_received(b"")

    def _end_stream(self) -> None:
        stream = self.stream
        if stream is None:
            return
        if stream.handle is not None:
            stream.handle.cancel()
        stream.done = True
        self.stream = None
        self.server.stats.active -= 1


def expected_events(tokens: int, tokens_per_event: int) -> int:
    """How many content events a stream of ``tokens`` tokens has."""
    return math.ceil(tokens / tokens_per_event)
