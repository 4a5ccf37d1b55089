"""SGLang (``sglang serve``): adapter, diagnosis rules, log patterns, help, image, sim profile."""

from __future__ import annotations

from typing import Any

from bringup.engines.base import EngineAdapter
from bringup.engines.registry import hookimpl
from bringup.engines.sglang.adapter import SGLangAdapter
from bringup.engines.sglang.logs import server_args_from_log

__all__ = ["SGLangAdapter", "server_args_from_log"]


@hookimpl
def register_engines(register: Any) -> None:
    adapter: EngineAdapter = SGLangAdapter()
    register(adapter)
