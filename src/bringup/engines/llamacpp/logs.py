"""What llama-server's log says: the lines that mean start-up failed, and what it chose.

``read_chosen`` fills flash_attn (resolved on/off), flash_attn_requested, kv_type_k,
kv_type_v, n_ctx, n_slots, n_ctx_slot, kv_unified, backend, gpu_layers and fa_kv_fallback.
"""

from __future__ import annotations

import re

from bringup.diagnose.chosen import Pattern, pattern, scan

FATAL = (
    r"exiting due to",
    r"(?:^|: )error: ",  # llama.cpp reports fatal problems as "<func>: error: ..." lines
    r"^error while handling argument",
    r"couldn't bind HTTP server socket",
    r"GGML_ASSERT\(",
    r"\.cu:\d+: CUDA error$",  # ggml-cuda's abort line; the reason follows it
    r"failed to allocate \w+ buffer|unable to allocate \w+ buffer",
)

_CHOSEN: list[Pattern] = [
    pattern("flash_attn_requested", r"llama_context: flash_attn\s*=\s*(\w+)"),
    # "Flash Attention was auto, set to enabled" (older), "resolve_fused_ops: Flash Attention
    # enabled" (newer builds)
    pattern("flash_attn", r"Flash Attention (?:was \w+, set to )?(enabled|disabled)"),
    pattern("n_ctx", r"llama_context: n_ctx\s*=\s*(\d+)"),
    pattern("n_slots", r"\bn_slots = (\d+)"),
    pattern("n_ctx_slot", r"new slot,? (?:n_ctx_slot|n_ctx) = (\d+)"),
    pattern("n_ctx_slot", r"\bn_ctx_slot = (\d+)"),
    pattern("kv_unified", r"kv_unified = '?(true|false)'?"),
    pattern("gpu_layers", r"offloaded (\d+/\d+) layers to GPU"),
    # CUDA builds hold flash-attention kernels for same-type K/V pairs only; a mixed pair
    # silently runs converted to f16 ("... converting K and V to f16 instead (slow)")
    pattern("fa_kv_fallback", r"no FlashAttention vector kernel compiled for K/V types ([\w-]+)"),
]
_KV = re.compile(r"(?:llama_kv_cache\w*|KV self size).*K \((\w+)\):.*V \((\w+)\):")
_DEVICE = re.compile(r"\b(CUDA|ROCm|Vulkan|Metal|MTL|SYCL|CANN)\d* (?:model|KV) buffer size")
_CPU_ONLY = re.compile(r"\bCPU(?:_Mapped|_REPACK)? model buffer size")


def read_chosen(lines: list[str], found: dict[str, str]) -> None:
    scan(lines, _CHOSEN, found)
    if "flash_attn" in found:
        found["flash_attn"] = "on" if found["flash_attn"] == "enabled" else "off"
    elif found.get("flash_attn_requested") in ("enabled", "disabled", "1", "0", "on", "off"):
        found["flash_attn"] = (
            "on" if found["flash_attn_requested"] in ("enabled", "1", "on") else "off"
        )
    ks, vs = [], []
    for text in lines:
        m = _KV.search(text)
        if m:
            ks.append(m.group(1))
            vs.append(m.group(2))
    if ks:
        found["kv_type_k"] = ",".join(dict.fromkeys(ks))
        found["kv_type_v"] = ",".join(dict.fromkeys(vs))
    devices = {m.group(1) for t in lines if (m := _DEVICE.search(t))}
    if devices:
        found["backend"] = ",".join(sorted(devices))
    elif any(_CPU_ONLY.search(t) for t in lines):
        found["backend"] = "CPU"
