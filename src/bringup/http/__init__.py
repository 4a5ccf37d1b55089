"""The HTTP layer: one URL normaliser, one session factory, one OpenAI-compatible client.

:mod:`~bringup.http.urls` (server root, ``/v1`` and root paths), :mod:`~bringup.http.session`
(headers, timeouts, transport errors mapped to :class:`~bringup.errors.RequestError`),
:mod:`~bringup.http.openai` (the client) and :mod:`~bringup.http.completions` (answers
read into one shape). The benchmark's measured stream transport stays in
:mod:`bringup.bench.stream_http`.

Each name is loaded from its module on first use: reading a stored answer
(:mod:`~bringup.http.completions`) does not load the client and aiohttp with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bringup.lazy import exports

if TYPE_CHECKING:
    from bringup.errors import RequestError
    from bringup.http.completions import Completion, parse_completion, parse_logprobs
    from bringup.http.openai import Answer, OpenAIClient
    from bringup.http.session import auth_headers, open_session
    from bringup.http.urls import api_url, root_url, server_root

_HOME = {
    "RequestError": "bringup.errors",
    "Completion": "bringup.http.completions",
    "parse_completion": "bringup.http.completions",
    "parse_logprobs": "bringup.http.completions",
    "Answer": "bringup.http.openai",
    "OpenAIClient": "bringup.http.openai",
    "auth_headers": "bringup.http.session",
    "open_session": "bringup.http.session",
    "api_url": "bringup.http.urls",
    "root_url": "bringup.http.urls",
    "server_root": "bringup.http.urls",
}

__all__ = [
    "Answer",
    "Completion",
    "OpenAIClient",
    "RequestError",
    "api_url",
    "auth_headers",
    "open_session",
    "parse_completion",
    "parse_logprobs",
    "root_url",
    "server_root",
]


__getattr__ = exports(__name__, _HOME)
