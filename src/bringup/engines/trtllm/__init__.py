"""TensorRT-LLM (``trtllm-serve``): adapter, diagnosis rules, log patterns, help, image, sim."""

from __future__ import annotations

from typing import Any

from bringup.engines.base import EngineAdapter
from bringup.engines.registry import hookimpl
from bringup.engines.trtllm.adapter import TRTLLMAdapter, write_yaml_options, yaml_options

__all__ = ["TRTLLMAdapter", "write_yaml_options", "yaml_options"]


@hookimpl
def register_engines(register: Any) -> None:
    adapter: EngineAdapter = TRTLLMAdapter()
    register(adapter)
