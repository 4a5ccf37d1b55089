"""The one aiohttp session factory, and the mapping of transport errors into bringup's.

:func:`open_session` sets what every bringup request shares: the bearer token when there
is an API key (never logged), the overall and connect timeouts, and the connection limit
and read buffer the benchmark sizes for its streams. :func:`no_response` turns what
aiohttp or the socket raised into one :class:`~bringup.errors.RequestError` naming the
request, and :func:`why_no_response` says it in the words the readiness record keeps
("connection refused", "timeout", "server disconnected").
"""

from __future__ import annotations

import aiohttp

from bringup.errors import RequestError

TRANSPORT_ERRORS = (TimeoutError, aiohttp.ClientError, OSError)


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def open_session(
    *,
    timeout_s: float,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
    connect_timeout_s: float | None = None,
    connections: int | None = None,
    read_bufsize: int | None = None,
    raw: bool = False,
) -> aiohttp.ClientSession:
    """A session for one server. ``connections`` caps the pool (aiohttp's default else);
    ``raw`` leaves bodies compressed and sends no User-Agent (the benchmark's own bytes)."""
    extra: dict[str, object] = {}
    if connections is not None:
        extra["connector"] = aiohttp.TCPConnector(limit=max(connections, 1), ttl_dns_cache=None)
    if read_bufsize is not None:
        extra["read_bufsize"] = read_bufsize
    if raw:
        extra["auto_decompress"] = False
        extra["skip_auto_headers"] = ("User-Agent",)
    return aiohttp.ClientSession(
        headers={**(headers or {}), **auth_headers(api_key)},
        timeout=aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect_timeout_s),
        **extra,  # type: ignore[arg-type]
    )


STALE = "server disconnected"  # a kept-alive connection the server had closed


def why_no_response(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return STALE
    if isinstance(exc, aiohttp.ClientConnectionError):
        return "connection refused"
    return str(exc) or type(exc).__name__


def no_response(method: str, path: str, exc: BaseException) -> RequestError:
    """The request got no HTTP answer at all (refused, reset, timed out)."""
    timed_out = isinstance(exc, TimeoutError)
    reason = "timed out" if timed_out else str(exc) or type(exc).__name__
    kind = "timeout" if timed_out else "connection"
    return RequestError(f"{method} {path}: no response ({reason})", kind=kind)
