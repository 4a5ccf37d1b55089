"""The HTTP layer: one URL normaliser, one session factory, one OpenAI-compatible client.

:mod:`~bringup.http.urls` (server root, ``/v1`` and root paths), :mod:`~bringup.http.session`
(headers, timeouts, transport errors mapped to :class:`~bringup.errors.RequestError`),
:mod:`~bringup.http.openai` (the client) and :mod:`~bringup.http.completions` (answers
read into one shape). The benchmark's measured stream transport stays in
:mod:`bringup.bench.stream_http`.
"""

from bringup.errors import RequestError
from bringup.http.completions import Completion, parse_completion, parse_logprobs
from bringup.http.openai import Answer, OpenAIClient
from bringup.http.session import auth_headers, open_session
from bringup.http.urls import api_url, root_url, server_root

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
