"""vLLM's captured help and the flags (and environment variables) it renamed or dropped.

``help/vllm-0.33.0-serve-help-all.txt``: ``vllm serve --help=all`` of vLLM 0.33.0, with
``VLLM_TARGET_DEVICE=cpu``.
"""

from __future__ import annotations

from bringup.engines.flagcheck import CapturedHelp, KnownChange

CAPTURED = CapturedHelp(
    "bringup.engines.vllm", "vllm-0.33.0-serve-help-all.txt", "0.33.0", "argparse"
)
# help printed without a version names it in its documentation links
VERSION_IN_HELP = r"docs\.vllm\.ai/en/v(\d+\.\d+[\w.]*)/"

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
)
