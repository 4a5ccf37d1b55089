"""The one URL normaliser: a server's root, its ``/v1`` API paths and its root paths.

Users give a server as ``http://host:port``, with or without a trailing ``/`` or ``/v1``;
every request bringup makes is built from :func:`server_root` so the three spellings reach
the same endpoints. (The measured stream transport splits its URL into host and port on its
own, in :func:`bringup.bench.stream_http.server_address`.)
"""

from __future__ import annotations


def server_root(base_url: str) -> str:
    """``http://h:p`` from ``http://h:p``, ``http://h:p/`` or ``http://h:p/v1``."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base


def api_url(base_url: str, path: str) -> str:
    """An OpenAI API endpoint: ``api_url(url, "completions")`` is ``<root>/v1/completions``."""
    return f"{server_root(base_url)}/v1/{path.lstrip('/')}"


def root_url(base_url: str, path: str) -> str:
    """A server-root endpoint such as ``/tokenize``, ``/health`` or ``/props``."""
    return f"{server_root(base_url)}/{path.lstrip('/')}"
