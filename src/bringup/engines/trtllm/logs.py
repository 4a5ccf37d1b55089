"""What trtllm-serve's log says: the lines that mean start-up failed, readiness, choices.

``read_chosen`` fills attention_backend, kv_cache_dtype and moe_backend from the LLM-API
options the server logs.
"""

from __future__ import annotations

from bringup.diagnose.chosen import Pattern, pattern, scan

FATAL = (
    r"\[TensorRT-LLM\]\[ERROR\]",
    r"MPI_ABORT was invoked",
)
READY = r"Application startup complete|Uvicorn running on"

_CHOSEN: list[Pattern] = [
    pattern("attention_backend", r"\battn_backend[\"']?\s*[:=]\s*[\"']?(\w+)"),
    pattern("kv_cache_dtype", r"kv_cache_config.*\bdtype[\"']?\s*[:=]\s*[\"']?(\w+)"),
    pattern("moe_backend", r"\bmoe_backend[\"']?\s*[:=]\s*[\"']?(\w+)"),
]


def read_chosen(lines: list[str], found: dict[str, str]) -> None:
    scan(lines, _CHOSEN, found)
