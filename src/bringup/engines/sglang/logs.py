"""What SGLang's log says: the lines that mean start-up failed, readiness, what it chose.

``read_chosen`` fills, from the ``server_args=ServerArgs(...)`` line and the start-up lines:
attention_backend (+ prefill/decode), moe_runner_backend, moe_a2a_backend, kv_cache_dtype,
quantization, dtype, fp8_gemm_backend, fp4_gemm_backend, sampling_backend,
speculative_algorithm, model_class, weight_dtype, kv_tokens, cuda_graphs.
"""

from __future__ import annotations

import re
from typing import Any

from bringup.diagnose.chosen import Pattern, pattern, scan

FATAL = (
    r"Scheduler hit an exception",
    r"Received sigquit from a child process",
    r"Initialization failed\. warmup error",
    r"Not enough memory\. Please try to increase --mem-fraction-static",
    r"Capture cuda graph failed",
    r"sglang serve: error:|launch_server\.py: error:",
)
READY = r"The server is fired up and ready to roll!"

# (key, regex whose group 1 is the value) read from the raw log by the adapter
CHOSEN_PATTERNS = (
    ("kv_cache_tokens", r"KV Cache is allocated\. #tokens: (\d+)"),
    ("max_total_num_tokens", r"max_total_num_tokens=(\d+)"),
    ("cuda_graph_bs", r"Capture cuda graph bs (\[[^\]]*\])"),
    ("model_dtype", r"Load weight end\. type=\w+, dtype=torch\.(\w+)"),
)

# resolved server arguments worth keeping with a trial
_CHOSEN_KEY = re.compile(
    r".*_backend|.*_dtype|dtype|quantization|speculative_\w+|cuda_graph\w*|disable_cuda_graph"
    r"|mamba_\w*strategy|(tp|dp|ep|pp|attn_dp|moe_dp)_size|mem_fraction_static|page_size"
    r"|max_running_requests|chunked_prefill_size|max_total_tokens|max_prefill_tokens"
)
_SERVER_ARGS_ITEM = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\[[^\]]*\]|[^,()\s]+)")


def keep(key: str, value: Any) -> bool:
    """Whether a resolved server argument is worth keeping with a trial."""
    return bool(_CHOSEN_KEY.fullmatch(key)) and value is not None and value != "None"


def server_args_from_log(log_text: str) -> dict[str, str]:
    """The resolved arguments SGLang prints as ``server_args=ServerArgs(...)``."""
    found: dict[str, str] = {}
    for line in log_text.splitlines():
        start = line.find("server_args=ServerArgs(")
        if start < 0:
            continue
        for key, raw in _SERVER_ARGS_ITEM.findall(line[start + len("server_args=ServerArgs(") :]):
            value = raw[1:-1] if raw.startswith("'") else raw
            if keep(key, value):
                found[key] = value
    return found


_CHOSEN: list[Pattern] = [
    # "not specified" since 0.5 (the logs of today), "not set" before
    pattern("attention_backend", r"Attention backend not (?:specified|set)\. Use (\w+) backend"),
    pattern("model_class", r"Load weight end\. (?:elapsed=[\d.]+ s, )?type=(\w+)"),
    pattern("weight_dtype", r"Load weight end\..*dtype=(?:torch\.)?(\w+)"),
    pattern("kv_tokens", r"KV Cache is allocated\. #tokens: (\d+)"),
]
_ARGS = {
    "attention_backend": "attention_backend",
    "prefill_attention_backend": "prefill_attention_backend",
    "decode_attention_backend": "decode_attention_backend",
    "moe_runner_backend": "moe_runner_backend",
    "moe_a2a_backend": "moe_a2a_backend",
    "kv_cache_dtype": "kv_cache_dtype",
    "quantization": "quantization",
    "dtype": "dtype",
    "fp8_gemm_runner_backend": "fp8_gemm_backend",
    "fp4_gemm_runner_backend": "fp4_gemm_backend",
    "sampling_backend": "sampling_backend",
    "speculative_algorithm": "speculative_algorithm",
    "disable_cuda_graph": "disable_cuda_graph",
}
_ARG = re.compile(r"\b(\w+)=('(?:[^']*)'|None|True|False|[\w.+-]+)")
_GRAPHS_ON = re.compile(r"Capture cuda graph end")


def read_chosen(lines: list[str], found: dict[str, str]) -> None:
    for text in lines:
        if "ServerArgs(" not in text:
            continue
        for name, value in _ARG.findall(text):
            if name in _ARGS and value != "None":
                found[_ARGS[name]] = value.strip("'")
    scan(lines, _CHOSEN, found)
    if found.get("disable_cuda_graph") == "True":
        found["cuda_graphs"] = "off"
    elif any(_GRAPHS_ON.search(t) for t in lines):
        found["cuda_graphs"] = "on"
    found.pop("disable_cuda_graph", None)
