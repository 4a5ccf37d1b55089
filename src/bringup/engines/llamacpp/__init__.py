"""llama.cpp's ``llama-server``: adapter, rules, log patterns, help, image, sim profile.

``ollama`` (a plugin of its own, registered after the other built-ins) reads the logs of
Ollama, which embeds llama.cpp.
"""

from __future__ import annotations

from bringup.engines.llamacpp.adapter import LlamaCppAdapter, find_llama_server
from bringup.engines.registry import hookimpl

__all__ = ["LlamaCppAdapter", "find_llama_server"]


@hookimpl
def register_engines(register):  # type: ignore[no-untyped-def]
    register(LlamaCppAdapter())
