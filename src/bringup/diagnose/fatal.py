"""Is this one log line a sign the launch has already failed?

Runs on every line during readiness, so it is one precompiled regex search per line.
It answers True only for lines engines print when they are about to die: argparse errors,
CUDA OOM and CUDA errors, NCCL errors, a busy port (here), and the lines each engine's folder
lists as its own (its adapter's ``fatal_patterns``: "failed to start" lines and the like).
Benign start-up text that merely contains the word "error" (parameter lists,
``error_handler`` names, log levels of warnings) does not match.
"""

from __future__ import annotations

import re
from functools import cache

from bringup.diagnose.logtext import content

_COMMON = [
    r"CUDA out of memory",
    r"OutOfMemoryError",
    r"CUDA error: ",
    r"cudaMalloc failed",
    r"no kernel image is available",
    r"illegal memory access",
    r"NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError",
    r"Address already in use|EADDRINUSE",
    r": error: (?:unrecognized arguments|argument |ambiguous option|the following arguments)",
    r"^Killed$",
    r"Segmentation fault|core dumped|terminate called after throwing",
]


@cache
def _compiled(own: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in [*_COMMON, *own]), re.MULTILINE)


def _pattern(engine: str | None) -> re.Pattern[str]:
    from bringup.engines.registry import adapters, find_engine

    adapter = find_engine(engine)
    if adapter is not None and adapter.rules:
        return _compiled(adapter.fatal_patterns)
    # an unknown engine, or one without diagnosis of its own (``command``): every engine's
    return _compiled(tuple(dict.fromkeys(p for a in adapters() for p in a.fatal_patterns)))


def fatal_line(line: str, engine: str | None = None) -> bool:
    """True when the line alone shows the launch has failed."""
    return _pattern(engine).search(content(line)) is not None
