"""What a healthy engine says it chose: backends, kernels, KV dtype, slots.

``extract_chosen(text, engine)`` returns a flat ``{name: value}`` map from the start-up log,
so a silent fallback (flash attention resolved off, a Marlin kernel instead of a native FP8
GEMM, a KV cache left at f16) is visible in results. Keys per engine:
- llama.cpp / ollama: flash_attn, flash_attn_requested, kv_type_k, kv_type_v, n_ctx,
  n_slots, n_ctx_slot, kv_unified, backend, gpu_layers
- vLLM: attention_backend, flash_attn_version, mla_prefill_backend, moe_backend,
  gemm_kernel, quant_method, kv_cache_dtype, dtype, quantization, cuda_graphs
- SGLang: attention_backend (+ prefill/decode), moe_runner_backend, kv_cache_dtype,
  quantization, dtype, fp8_gemm_backend, sampling_backend, speculative_algorithm,
  model_class, weight_dtype, kv_tokens, cuda_graphs
Later lines win over earlier ones (engines log the resolved value after the requested one).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bringup.diagnose.logtext import content, engine_key, log_lines

_Pattern = tuple[str, re.Pattern[str]]


def _p(key: str, pattern: str) -> _Pattern:
    return key, re.compile(pattern)


_LLAMACPP: list[_Pattern] = [
    _p("flash_attn_requested", r"llama_context: flash_attn\s*=\s*(\w+)"),
    # "Flash Attention was auto, set to enabled" (older), "resolve_fused_ops: Flash Attention
    # enabled" (newer builds)
    _p("flash_attn", r"Flash Attention (?:was \w+, set to )?(enabled|disabled)"),
    _p("n_ctx", r"llama_context: n_ctx\s*=\s*(\d+)"),
    _p("n_slots", r"\bn_slots = (\d+)"),
    _p("n_ctx_slot", r"new slot,? (?:n_ctx_slot|n_ctx) = (\d+)"),
    _p("n_ctx_slot", r"\bn_ctx_slot = (\d+)"),
    _p("kv_unified", r"kv_unified = '?(true|false)'?"),
    _p("gpu_layers", r"offloaded (\d+/\d+) layers to GPU"),
    # CUDA builds hold flash-attention kernels for same-type K/V pairs only; a mixed pair
    # silently runs converted to f16 ("... converting K and V to f16 instead (slow)")
    _p("fa_kv_fallback", r"no FlashAttention vector kernel compiled for K/V types ([\w-]+)"),
]
_LLAMA_KV = re.compile(r"(?:llama_kv_cache\w*|KV self size).*K \((\w+)\):.*V \((\w+)\):")
_LLAMA_DEVICE = re.compile(r"\b(CUDA|ROCm|Vulkan|Metal|MTL|SYCL|CANN)\d* (?:model|KV) buffer size")
_LLAMA_CPU_ONLY = re.compile(r"\bCPU(?:_Mapped|_REPACK)? model buffer size")

_VLLM: list[_Pattern] = [
    _p(
        "attention_backend",
        r"Using (?:AttentionBackendEnum\.)?([A-Z][A-Z0-9_]+) "
        r"(?:attention )?backend(?: out of potential backends)?",
    ),
    _p(
        "attention_backend",
        r"Using (Flash ?Attention(?:-\d)?|FlashInfer|XFormers|Triton) "
        r"backend(?: on V1 engine)?\.?$",
    ),
    _p("flash_attn_version", r"Using FlashAttention version (\d+)"),
    _p("mla_prefill_backend", r"Using (\w+) MLA prefill backend"),
    _p("moe_backend", r"Using '?(\w+)'? (?:\w+ )?MoE backend"),
    _p("moe_backend", r"Using (\w+) backend for (?:\w+ )?MoE"),
    _p("gemm_kernel", r"(?:Using|Selected) (\w+(?:Kernel|Linear\w*)) for (?:\w+ )?(?:GEMM|linear)"),
    _p("gemm_kernel", r"Using (\w*Marlin\w*) (?:backend|kernel) for (?!\w+ MoE)"),
    _p("quant_method", r"Using (\w+(?:Method|LinearMethod|MoEMethod))\b"),
    _p("kv_cache_dtype", r"Using (\w+) data type to store kv cache"),
    _p("dtype", r"with config: .*\bdtype=(?:torch\.)?(\w+)"),
    _p("quantization", r"with config: .*\bquantization=(\w+)"),
    _p("kv_cache_dtype", r"with config: .*\bkv_cache_dtype=(\w+)"),
]
_VLLM_GRAPHS_ON = re.compile(r"Graph capturing finished|Capturing CUDA graphs")
_VLLM_GRAPHS_OFF = re.compile(
    r"Cudagraph is disabled|enforce_eager=True|CUDA graphs? (?:is )?disabled"
)

_SGLANG: list[_Pattern] = [
    _p("attention_backend", r"Attention backend not (?:specified|set)\. Use (\w+) backend"),
    _p("model_class", r"Load weight end\. (?:elapsed=[\d.]+ s, )?type=(\w+)"),
    _p("weight_dtype", r"Load weight end\..*dtype=(?:torch\.)?(\w+)"),
    _p("kv_tokens", r"KV Cache is allocated\. #tokens: (\d+)"),
]
_SGLANG_ARGS = {
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
_SGLANG_ARG = re.compile(r"\b(\w+)=('(?:[^']*)'|None|True|False|[\w.+-]+)")
_SGLANG_GRAPHS_ON = re.compile(r"Capture cuda graph end")

_TRTLLM: list[_Pattern] = [
    _p("attention_backend", r"\battn_backend[\"']?\s*[:=]\s*[\"']?(\w+)"),
    _p("kv_cache_dtype", r"kv_cache_config.*\bdtype[\"']?\s*[:=]\s*[\"']?(\w+)"),
    _p("moe_backend", r"\bmoe_backend[\"']?\s*[:=]\s*[\"']?(\w+)"),
]


def _scan(lines: list[str], patterns: list[_Pattern], found: dict[str, str]) -> None:
    for text in lines:
        for key, pattern in patterns:
            m = pattern.search(text)
            if m:
                found[key] = m.group(1)


def _llamacpp(lines: list[str], found: dict[str, str]) -> None:
    _scan(lines, _LLAMACPP, found)
    if "flash_attn" in found:
        found["flash_attn"] = "on" if found["flash_attn"] == "enabled" else "off"
    elif found.get("flash_attn_requested") in ("enabled", "disabled", "1", "0", "on", "off"):
        found["flash_attn"] = (
            "on" if found["flash_attn_requested"] in ("enabled", "1", "on") else "off"
        )
    ks, vs = [], []
    for text in lines:
        m = _LLAMA_KV.search(text)
        if m:
            ks.append(m.group(1))
            vs.append(m.group(2))
    if ks:
        found["kv_type_k"] = ",".join(dict.fromkeys(ks))
        found["kv_type_v"] = ",".join(dict.fromkeys(vs))
    devices = {m.group(1) for t in lines if (m := _LLAMA_DEVICE.search(t))}
    if devices:
        found["backend"] = ",".join(sorted(devices))
    elif any(_LLAMA_CPU_ONLY.search(t) for t in lines):
        found["backend"] = "CPU"


def _vllm(lines: list[str], found: dict[str, str]) -> None:
    _scan(lines, _VLLM, found)
    if any(_VLLM_GRAPHS_OFF.search(t) for t in lines):
        found["cuda_graphs"] = "off"
    elif any(_VLLM_GRAPHS_ON.search(t) for t in lines):
        found["cuda_graphs"] = "on"


def _sglang(lines: list[str], found: dict[str, str]) -> None:
    for text in lines:
        if "ServerArgs(" not in text:
            continue
        for name, value in _SGLANG_ARG.findall(text):
            if name in _SGLANG_ARGS and value != "None":
                found[_SGLANG_ARGS[name]] = value.strip("'")
    _scan(lines, _SGLANG, found)
    if found.get("disable_cuda_graph") == "True":
        found["cuda_graphs"] = "off"
    elif any(_SGLANG_GRAPHS_ON.search(t) for t in lines):
        found["cuda_graphs"] = "on"
    found.pop("disable_cuda_graph", None)


def _trtllm(lines: list[str], found: dict[str, str]) -> None:
    _scan(lines, _TRTLLM, found)


_READERS: dict[str, Callable[[list[str], dict[str, str]], None]] = {
    "llama.cpp": _llamacpp,
    "ollama": _llamacpp,
    "vllm": _vllm,
    "sglang": _sglang,
    "trtllm": _trtllm,
}


def extract_chosen(text: str, engine: str | None = None) -> dict[str, str]:
    """What the engine's log says it selected; empty when it says nothing we know."""
    lines = [content(ln) for ln in log_lines(text)]
    key = engine_key(engine)
    found: dict[str, str] = {}
    readers = [_READERS[key]] if key in _READERS else list(_READERS.values())[:4]
    for read in readers:
        read(lines, found)
    return found
