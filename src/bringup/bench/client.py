"""The streaming HTTP client: one POST per request, raw reads stamped on receipt.

:func:`send` writes an OpenAI-compatible ``/v1/completions`` or ``/v1/chat/completions``
request with ``stream: true`` and ``stream_options.include_usage``, then records the body as
``(monotonic(), bytes)`` pieces; no SSE or JSON parsing happens until the stream ends.

Hot path: once the headers are in, the response's ``StreamReader`` is tapped: aiohttp's
HTTP parser hands each decoded body piece to our ``feed_data``, which stamps and appends it
right inside the socket callback. No future is resolved and no task wakes per event, so the
stamp is taken before any queueing in the event loop and the per-event cost is one append.
Where the tap does not fit (a reader without those hooks), ``readany`` is used instead.
Options that pin the output length (``ignore_eos``, ``min_tokens``) are sent unless the
server refused them at preparation (see :mod:`bringup.bench.prompts`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from bringup.bench.config import BenchConfig
from bringup.bench.records import ParseQueue, RequestRecord, now, parse_stream

_READ_BUFSIZE = 1 << 18  # large reads: fewer wake-ups when many events are queued


def api_url(base_url: str, path: str) -> str:
    """``base_url`` (with or without a trailing ``/v1``) joined with ``/v1/<path>``."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[:-3]
    return f"{base}/v1/{path}"


def root_url(base_url: str, path: str) -> str:
    """A server-root endpoint such as ``/tokenize`` or ``/health``."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[:-3]
    return f"{base}/{path}"


def make_session(cfg: BenchConfig, connections: int) -> aiohttp.ClientSession:
    """One pooled session sized for ``connections`` concurrent streams."""
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if cfg.api_key:
        headers["Authorization"] = f"Bearer {cfg.api_key}"
    connector = aiohttp.TCPConnector(limit=max(connections, 1), ttl_dns_cache=None)
    return aiohttp.ClientSession(
        connector=connector,
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=cfg.timeout_s),
        read_bufsize=_READ_BUFSIZE,
        auto_decompress=False,
        skip_auto_headers=("User-Agent",),
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


def endpoint_url(base_url: str, cfg: BenchConfig) -> str:
    return api_url(base_url, "chat/completions" if cfg.endpoint == "chat" else "completions")


class _Sink:
    """Where a tapped reader's bytes go, and the future its end resolves."""

    __slots__ = ("append", "done")

    def __init__(self, reads: list[tuple[float, bytes]], done: asyncio.Future[None]) -> None:
        self.append = reads.append
        self.done = done


_SINKS: dict[int, _Sink] = {}  # id(reader) -> sink, only while a body is being read


class _TappedReader(aiohttp.StreamReader):
    """A ``StreamReader`` whose parser callbacks stamp and keep bytes instead of buffering.

    Instances are made by swapping the class of aiohttp's own reader (same slots, no new
    ones), so the parser, which already holds that object, calls these methods directly.
    """

    __slots__ = ()

    def feed_data(self, data: bytes, size: int = 0) -> bool:
        _SINKS[id(self)].append((now(), data))
        return False  # nothing left pending for the parser

    def feed_eof(self) -> None:
        super().feed_eof()
        sink = _SINKS.get(id(self))
        if sink is not None and not sink.done.done():
            sink.done.set_result(None)

    def set_exception(self, exc: BaseException, *cause: BaseException) -> None:
        super().set_exception(exc, *cause)
        sink = _SINKS.get(id(self))
        if sink is not None and not sink.done.done():
            sink.done.set_exception(exc)


async def _tap_body(
    content: aiohttp.StreamReader, reads: list[tuple[float, bytes]], budget_s: float
) -> bool:
    """Collect the body through the parser's own callbacks until EOF (see module doc).

    Returns False, having read nothing, when the reader cannot be tapped.
    """
    if type(content) is not aiohttp.StreamReader:
        return False
    early = content.read_nowait()  # bytes that arrived together with the headers
    if early:
        reads.append((now(), early))
    if content.is_eof():
        return True
    if (exc := content.exception()) is not None:
        raise exc
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    key = id(content)
    _SINKS[key] = _Sink(reads, done)
    content.__class__ = _TappedReader
    try:
        async with asyncio.timeout(max(budget_s, 0.0)):
            await done
    finally:
        content.__class__ = aiohttp.StreamReader
        del _SINKS[key]
    rest = content.read_nowait()  # only if something fed the reader around the tap
    if rest:
        reads.append((now(), rest))
    return True


async def send(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    rec: RequestRecord,
    timeout_s: float = 300.0,
    parser: ParseQueue | None = None,
) -> str | None:
    """Stream one request into ``rec``; returns an error body excerpt when it failed.

    A request that fails before any response byte on a connection the server had already
    closed (llama-server closes after each streamed response without saying so) is sent
    again; every pooled connection may be such a one, so it is tried up to once per pooled
    connection and then on a fresh one; ``rec.retries`` counts that. With a ``parser``, the
    body is queued there and parsed later (see ``ParseQueue``); without one it is parsed
    before returning.
    """
    reads: list[tuple[float, bytes]] = []
    detail: str | None = None
    # each stale attempt discards its connection, so pool size + 1 attempts reach a fresh one
    connector = session.connector
    attempts = 1 + max(connector.limit if connector is not None else 0, 1)
    for attempt in range(attempts):
        rec.sent = now()
        rec.error = detail = None
        try:
            async with session.post(url, data=body) as resp:
                rec.status = resp.status
                if resp.status != 200:
                    rec.error = f"http_{resp.status}"
                    detail = (await resp.text(errors="replace"))[:300]
                    rec.end = now()
                    return detail
                content = resp.content
                tapped = await _tap_body(content, reads, timeout_s - (now() - rec.sent))
                if not tapped:
                    while chunk := await content.readany():
                        reads.append((now(), chunk))
        except TimeoutError:
            rec.error = "timeout"
        except aiohttp.ClientConnectorError as exc:
            rec.error = "connect"
            detail = str(exc)[:300]
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
            rec.error = "disconnect"
            detail = str(exc)[:300]
        except aiohttp.ClientError as exc:
            rec.error = "client_error"
            detail = f"{type(exc).__name__}: {exc}"[:300]
        stale = rec.error in ("disconnect", "client_error") and rec.status == 0 and not reads
        if not (stale and attempt < attempts - 1):
            break
        rec.retries += 1
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
