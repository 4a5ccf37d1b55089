"""vLLM's captured help and the flags (and environment variables) it renamed or dropped.

``help/vllm-0.33.0-serve-help-all.txt``: ``vllm serve --help=all`` of vLLM 0.33.0, with
``VLLM_TARGET_DEVICE=cpu``. ``help/vllm-0.26.0-serve-help-all.txt``: the same of vLLM
0.26.0 as installed on an H200 (torch 2.11.0+cu130; docs/gpu/vllm/). The adapter picks the
capture of the installed version (:func:`bringup.engines.flagcheck.captured_entry`).
"""

from __future__ import annotations

from bringup.engines.flagcheck import CapturedHelp, KnownChange

CAPTURED = CapturedHelp(
    "bringup.engines.vllm", "vllm-0.33.0-serve-help-all.txt", "0.33.0", "argparse"
)
OLDER_CAPTURES = (
    CapturedHelp("bringup.engines.vllm", "vllm-0.26.0-serve-help-all.txt", "0.26.0", "argparse"),
)
# help printed without a version names it in its documentation links
VERSION_IN_HELP = r"docs\.vllm\.ai/en/v(\d+\.\d+[\w.]*)/"

# vLLM 0.26's boolean switches negate as --no-enable-X / --no-disable-X (argparse's
# BooleanOptionalAction); 0.33 spells the same switches --disable-X / --enable-X. Each side's
# spelling is a known change when checked against the other side's help.
_ENABLE_SWITCHES = (
    "chunked-prefill",
    "prefix-caching",
    "expert-parallel",
    "eplb",
    "lora",
    "sleep-mode",
    "prompt-embeds",
    "log-requests",
    "log-outputs",
    "dbo",
    "cumem-allocator",
    "auto-tool-choice",
    "elastic-ep",
    "mm-embeds",
)
_DISABLE_SWITCHES = (
    "cascade-attn",
    "custom-all-reduce",
    "sliding-window",
    "hybrid-kv-cache-manager",
    "chunked-mm-input",
    "fastapi-docs",
    "uvicorn-access-log",
    "nccl-for-dp-synchronization",
)


def _negation_renames() -> list[KnownChange]:
    out: list[KnownChange] = []
    pairs = [(f"--no-enable-{s}", f"--disable-{s}") for s in _ENABLE_SWITCHES]
    pairs += [(f"--no-disable-{s}", f"--enable-{s}") for s in _DISABLE_SWITCHES]
    for old, new in pairs:
        out.append(KnownChange(old, f"vLLM 0.33 spells {old} as {new}", new))
        out.append(KnownChange(new, f"vLLM 0.26 spells {new} as {old}", old))
    return out


KNOWN_CHANGES = (
    KnownChange(
        "--task",
        "vllm serve has no --task; pooling models use --runner pooling "
        "(and --convert embed|classify|reward)",
        "--runner pooling",
    ),
    KnownChange(
        "VLLM_ATTENTION_BACKEND",
        "the environment variable was removed around vLLM 0.15 and is silently ignored",
        "--attention-backend",
    ),
    KnownChange(
        "VLLM_TORCH_PROFILER_DIR",
        "the environment variable was removed in vLLM 0.16",
        "--profiler-config.torch_profiler_dir",
    ),
    *_negation_renames(),
)
