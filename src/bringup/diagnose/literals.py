"""The literal text every match of a regex must contain, to skip the regex on lines without it.

``needed(pattern)`` returns lower-case strings of which at least one occurs (lower-cased) in
any text the pattern matches, or ``None`` when no such set can be read off the pattern.
``may_match(pattern, lowered)`` is then a necessary condition: False means the pattern
cannot match, so the classifier does not run it. Python's ``re`` has no such prefilter for
case-insensitive alternations (it tries every branch at every position), and a log of long
lines that all pass the keyword gate cost ~140 rules x 2,000 characters per line; a few
substring tests (``in``, C speed) per rule make that a small fraction. Linear-time engines
(RE2) would need rewriting the lookaheads the rules use, so the set is read from the
pattern's own parse tree instead (the stdlib parser: no new dependency, exact by
construction; ``tests/unit/test_diagnose_literals.py`` checks it on every rule).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import cache
from re import Pattern
from typing import Any

with warnings.catch_warnings():
    # the public alias of re's own parser, deprecated in name only (same module, re._parser)
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants as sc
    import sre_parse

Needed = frozenset[str] | None


def _best(candidates: list[frozenset[str]]) -> Needed:
    """The most selective requirement: longest shortest string, then fewest strings."""
    usable = [c for c in candidates if c and all(c)]
    if not usable:
        return None
    return max(usable, key=lambda c: (min(len(s) for s in c), -len(c)))


def _of_items(items: Any) -> Needed:
    """A sequence: every item matches in turn, so any one item's requirement holds; runs
    of literal characters join into one string."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def close() -> None:
        if run:
            candidates.append(frozenset({"".join(run).lower()}))
            run.clear()

    for op, arg in items:
        if op is sc.LITERAL:
            run.append(chr(arg))
            continue
        close()
        found = _of_item(op, arg)
        if found is not None:
            candidates.append(found)
    close()
    return _best(candidates)


def _of_item(op: Any, arg: Any) -> Needed:
    if op is sc.SUBPATTERN:
        return _of_items(arg[-1])
    if op is sc.ATOMIC_GROUP:
        return _of_items(arg)
    if op is sc.BRANCH:
        union: set[str] = set()
        for branch in arg[1]:
            found = _of_items(branch)
            if found is None:
                return None  # one branch without a literal: the alternation guarantees none
            union |= found
        return frozenset(union)
    if op in (sc.MAX_REPEAT, sc.MIN_REPEAT, sc.POSSESSIVE_REPEAT):
        low, _high, item = arg
        return _of_items(item) if low >= 1 else None
    return None  # classes, anchors, lookarounds, backreferences: no literal guaranteed


@cache
def needed(pattern: Pattern[str]) -> Needed:
    try:
        return _of_items(sre_parse.parse(pattern.pattern, pattern.flags))
    except Exception:  # a syntax the stdlib parser of this Python reads differently
        return None


def may_match(pattern: Pattern[str], lowered: str) -> bool:
    """False only when the pattern cannot match the text ``lowered`` was lowered from."""
    strings = needed(pattern)
    return strings is None or any(s in lowered for s in strings)


class LiteralIndex:
    """The needed strings of many patterns, each tested once per text: which of the
    patterns may match a text (by position in the sequence given)."""

    def __init__(self, patterns: Sequence[Pattern[str]]) -> None:
        self._needs = [needed(p) for p in patterns]
        self._strings = tuple(sorted({s for n in self._needs if n for s in n}))

    def may_match(self, lowered: str) -> list[int]:
        present = {s for s in self._strings if s in lowered}
        return [i for i, n in enumerate(self._needs) if n is None or not n.isdisjoint(present)]
