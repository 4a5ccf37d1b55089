"""What vLLM's log says: the lines that mean start-up failed, and what it chose.

``read_chosen`` fills attention_backend, flash_attn_version, mla_prefill_backend,
moe_backend, gemm_kernel, quant_method, kv_cache_dtype, dtype, quantization, cuda_graphs and,
where graphs were captured, cudagraph_mode: the kinds captured, in order (``PIECEWISE+FULL``
for 0.26's default FULL_AND_PIECEWISE; the config line that names the mode is longer than
the lines kept).
"""

from __future__ import annotations

import re

from bringup.diagnose.chosen import Pattern, pattern, scan

FATAL = (
    r"Engine core initialization failed",
    r"EngineCore failed to start|WorkerProc failed to start",
    r"EngineDeadError",
    r"No available memory for the cache blocks",
    r"KV cache is needed, which is larger than the available KV cache memory",
    r"vllm serve: error:",
)
READY = r"Application startup complete|Starting vLLM (?:API )?server on http"

_CHOSEN: list[Pattern] = [
    pattern(
        "attention_backend",
        r"Using (?:AttentionBackendEnum\.)?([A-Z][A-Z0-9_]+) "
        r"(?:attention )?backend(?: out of potential backends)?",
    ),
    pattern(
        "attention_backend",
        r"Using (Flash ?Attention(?:-\d)?|FlashInfer|XFormers|Triton) "
        r"backend(?: on V1 engine)?\.?$",
    ),
    pattern("flash_attn_version", r"Using FlashAttention version (\d+)"),
    pattern("mla_prefill_backend", r"Using (\w+) MLA prefill backend"),
    pattern("moe_backend", r"Using '?(\w+)'? (?:\w+ )?MoE backend"),
    pattern("moe_backend", r"Using (\w+) backend for (?:\w+ )?MoE"),
    pattern(
        "gemm_kernel", r"(?:Using|Selected) (\w+(?:Kernel|Linear\w*)) for (?:\w+ )?(?:GEMM|linear)"
    ),
    pattern("gemm_kernel", r"Using (\w*Marlin\w*) (?:backend|kernel) for (?!\w+ MoE)"),
    pattern("quant_method", r"Using (\w+(?:Method|LinearMethod|MoEMethod))\b"),
    pattern("kv_cache_dtype", r"Using (\w+) data type to store kv cache"),
    pattern("dtype", r"with config: .*\bdtype=(?:torch\.)?(\w+)"),
    pattern("quantization", r"with config: .*\bquantization=(\w+)"),
    pattern("kv_cache_dtype", r"with config: .*\bkv_cache_dtype=(\w+)"),
]
_GRAPHS_ON = re.compile(r"Graph capturing finished|Capturing CUDA graphs")
_CAPTURE = re.compile(r"Capturing CUDA graphs \((\w+)\)")
_GRAPHS_OFF = re.compile(r"Cudagraph is disabled|enforce_eager=True|CUDA graphs? (?:is )?disabled")


def read_chosen(lines: list[str], found: dict[str, str]) -> None:
    scan(lines, _CHOSEN, found)
    if any(_GRAPHS_OFF.search(t) for t in lines):
        found["cuda_graphs"] = "off"
    elif any(_GRAPHS_ON.search(t) for t in lines):
        found["cuda_graphs"] = "on"
        kinds = dict.fromkeys(m.group(1) for t in lines for m in _CAPTURE.finditer(t))
        if kinds:
            found["cudagraph_mode"] = "+".join(kinds)
