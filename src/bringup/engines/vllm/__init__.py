"""vLLM (``vllm serve``): adapter, diagnosis rules, log patterns, help, image, sim profile."""

from __future__ import annotations

from typing import Any

from bringup.engines.base import EngineAdapter
from bringup.engines.registry import hookimpl
from bringup.engines.vllm.adapter import VLLMAdapter, non_default_args

__all__ = ["VLLMAdapter", "non_default_args"]


@hookimpl
def register_engines(register: Any) -> None:
    adapter: EngineAdapter = VLLMAdapter()
    register(adapter)
