"""llama-server's captured help and the flags it renamed.

``help/llama-server-b11434-cuda-help.txt``: ``llama-server --help`` of build b11434 (CUDA).
"""

from __future__ import annotations

from bringup.engines.flagcheck import CapturedHelp, KnownChange

CAPTURED = CapturedHelp(
    "bringup.engines.llamacpp", "llama-server-b11434-cuda-help.txt", "b11434", "llama"
)

KNOWN_CHANGES = (
    KnownChange(
        "--mlock",
        "llama-server replaced --mlock with --load-mode (ggml-org/llama.cpp#20834)",
        "--load-mode mmap+mlock",
    ),
    KnownChange(
        "--no-mmap",
        "llama-server replaced --no-mmap with --load-mode (ggml-org/llama.cpp#20834)",
        "--load-mode none",
    ),
)
