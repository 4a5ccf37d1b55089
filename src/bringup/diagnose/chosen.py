"""What a healthy engine says it chose: backends, kernels, KV dtype, slots.

``extract_chosen(text, engine)`` returns a flat ``{name: value}`` map from the start-up log,
so a silent fallback (flash attention resolved off, a Marlin kernel instead of a native FP8
GEMM, a KV cache left at f16) is visible in results. Each engine's folder reads its own log
(its adapter's ``read_chosen``; the keys are listed there); the log of an unknown engine, or
of one without rules of its own, is read by every registered reader. Later lines win over
earlier ones (engines log the resolved value after the requested one). ``pattern`` and
``scan`` are the helpers readers share.
"""

from __future__ import annotations

import re

from bringup.diagnose.logtext import content, log_lines

Pattern = tuple[str, re.Pattern[str]]


def pattern(key: str, regex: str) -> Pattern:
    return key, re.compile(regex)


def scan(lines: list[str], patterns: list[Pattern], found: dict[str, str]) -> None:
    """``found[key]`` = group 1 of each pattern's match, line by line (later lines win)."""
    for text in lines:
        for key, compiled in patterns:
            m = compiled.search(text)
            if m:
                found[key] = m.group(1)


def extract_chosen(text: str, engine: str | None = None) -> dict[str, str]:
    """What the engine's log says it selected; empty when it says nothing we know."""
    from bringup.engines.registry import adapters, find_engine

    lines = [content(ln) for ln in log_lines(text)]
    adapter = find_engine(engine)
    found: dict[str, str] = {}
    # an engine that brings no diagnosis of its own (``command``) may be any engine
    for reader in [adapter] if adapter is not None and adapter.rules else adapters():
        reader.read_chosen(lines, found)
    return found
