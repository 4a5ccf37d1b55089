"""The streaming HTTP client: one POST per request, raw reads stamped on arrival.

:func:`send` writes an OpenAI-compatible ``/v1/completions`` or ``/v1/chat/completions``
request with ``stream: true`` and ``stream_options.include_usage``, then records the body as
``(arrival, bytes)`` pieces; no SSE or JSON parsing happens until the stream ends.

Hot path: streamed requests go through :mod:`bringup.bench.stream_http`, which reads each
keep-alive socket from a loop reader, stamps each read with the kernel's receive time (the
client's own clock where the platform has none) and hands the decoded body pieces straight
to a list; no future is resolved and no task wakes per event. Other requests (model
list, tokenizer, sentinels) use an aiohttp session from :func:`make_session`.
Options that pin the output length (``ignore_eos``, ``min_tokens``) are sent unless the
server refused them at preparation (see :mod:`bringup.bench.prompts`).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import aiohttp
import orjson

from bringup.bench.config import BenchConfig
from bringup.bench.records import ParseQueue, RequestRecord, now, parse_stream
from bringup.bench.stall import StallError, StallWatch
from bringup.bench.stream_http import Exchange, StreamError, StreamPool, server_address
from bringup.errors import BringupError, RequestError
from bringup.http.session import open_session
from bringup.http.urls import root_url

_READ_BUFSIZE = 1 << 18  # large reads: fewer wake-ups when many events are queued


def check_reachable(
    base_url: str, timeout_s: float = 3.0, answer_timeout_s: float | None = None
) -> None:
    """Raise :class:`BringupError` unless ``base_url`` is http(s) and accepts a TCP connection.

    With ``answer_timeout_s``, the server must also start an answer to ``GET /v1/models``
    within that time (any status will do), else :class:`RequestError`: a server that
    accepts and never answers would otherwise cost one timeout per request of the run.
    """
    try:
        host, port, _ = server_address(base_url)
    except ValueError:
        raise BringupError(
            f"{base_url!r} is not a server URL; give one like http://127.0.0.1:8080."
        ) from None
    try:
        conn = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BringupError(
            f"nothing accepts connections at {host}:{port} ({reason}); "
            "start the server or fix the URL."
        ) from exc
    with conn:
        if answer_timeout_s is None:
            return
        try:
            conn.settimeout(answer_timeout_s)
            conn.sendall(
                f"GET /v1/models HTTP/1.1\r\nHost: {host}:{port}\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            answered = bool(conn.recv(1))
        except TimeoutError:
            answered = False
        except OSError:
            answered = True  # reset or refused mid-way: the run itself will say how it fails
        if not answered:
            raise RequestError(
                f"{host}:{port} accepts connections but sent no answer to GET /v1/models "
                f"within {answer_timeout_s:g} s; the server is stuck or not an HTTP server"
            )


def _headers(cfg: BenchConfig) -> dict[str, str]:
    """Headers of every benchmark request, with the API key when there is one."""
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if cfg.api_key:
        headers["Authorization"] = f"Bearer {cfg.api_key}"
    return headers


def make_session(cfg: BenchConfig, connections: int) -> aiohttp.ClientSession:
    """One pooled session sized for ``connections`` concurrent streams."""
    return open_session(
        timeout_s=cfg.timeout_s,
        headers=_headers(cfg),
        connections=connections,
        read_bufsize=_READ_BUFSIZE,
        raw=True,
    )


def request_body(cfg: BenchConfig, prompt: str | list[int], *, length_options: bool) -> bytes:
    """The JSON body of one streamed request."""
    body: dict[str, Any] = {
        "max_tokens": cfg.output_tokens,
        "temperature": cfg.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if cfg.model:
        body["model"] = cfg.model
    if cfg.endpoint == "chat":
        text = prompt if isinstance(prompt, str) else " ".join(map(str, prompt))
        body["messages"] = [{"role": "user", "content": text}]
    else:
        body["prompt"] = prompt
    if length_options and cfg.ignore_eos:
        # llama-server, vLLM and SGLang read ignore_eos; vLLM also honours min_tokens
        body["ignore_eos"] = True
        body["min_tokens"] = cfg.output_tokens
    return orjson.dumps(body)


def endpoint_path(cfg: BenchConfig) -> str:
    """The API path of the benchmark's requests (chat or text completions)."""
    return "/v1/chat/completions" if cfg.endpoint == "chat" else "/v1/completions"


def endpoint_url(base_url: str, cfg: BenchConfig) -> str:
    return root_url(base_url, endpoint_path(cfg))


def stream_pool(base_url: str, cfg: BenchConfig, *, kernel_stamps: bool = True) -> StreamPool:
    """Keep-alive connections for the benchmark's streamed requests to ``base_url``."""
    return StreamPool(endpoint_url(base_url, cfg), _headers(cfg), kernel_stamps=kernel_stamps)


async def send(
    pool: StreamPool,
    body: bytes,
    rec: RequestRecord,
    timeout_s: float = 300.0,
    parser: ParseQueue | None = None,
    watch: StallWatch | None = None,
) -> str | None:
    """Stream one request into ``rec``; returns an error body excerpt when it failed.

    ``rec.sent`` is when the client set out to send (the attempt the server answers is the
    one timed), ``rec.left`` when the request's last byte was handed to the kernel; TTFT
    and E2E run from ``left``. A request that fails before any response byte on a reused
    connection the server had already closed (llama-server closes after each streamed
    response without saying so) is sent again on another one; ``rec.retries`` counts that.
    The server never answered it, so it is not an error under load. With a ``parser``, the
    body is queued there and parsed later (see ``ParseQueue``); without one it is parsed
    before returning. With a ``watch``, a stream that goes silent too long ends as error
    ``stall`` (nothing was working), or ``slow`` (the engine worked on, but far too long).
    """
    exchange = Exchange()
    reads = exchange.reads
    detail: str | None = None
    deadline = now() + timeout_s
    while True:
        rec.sent = now()
        rec.error = detail = None
        try:
            rec.status = await pool.post(body, exchange, deadline - now(), watch)
        except TimeoutError:
            rec.error = "timeout"
        except StallError as exc:
            rec.error, detail = ("slow" if exc.slow else "stall"), str(exc)
        except StreamError as exc:
            if exc.stale and not reads:
                rec.retries += 1
                continue
            rec.error, detail = exc.kind, str(exc)[:300]
        break
    rec.left = exchange.left
    if rec.status not in (0, 200):
        rec.error = f"http_{rec.status}"
        detail = b"".join(piece for _, piece in reads)[:300].decode("utf-8", "replace")
        rec.end = now()
        return detail
    rec.end = reads[-1][0] if reads else now()
    if reads:
        if parser is not None:
            parser.submit(rec, reads)
        else:
            parse_stream(rec, reads)
    elif rec.error is None:
        rec.error = "no_tokens"
    return detail


async def cancel_all(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
