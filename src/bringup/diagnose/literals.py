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

import re
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


_MAX_EXACT = 16  # strings an exact run may stand for before it is cut (each costs a test)


def _exact_items(items: Any) -> frozenset[str] | None:
    """Every string the sequence can match, when it is made only of literal characters,
    small character sets, optional parts and alternations of such (and they are few);
    else None."""
    out = {""}
    for op, arg in items:
        found = _exact_item(op, arg)
        if found is None:
            return None
        out = {a + b for a in out for b in found}
        if len(out) > _MAX_EXACT:
            return None
    return frozenset(out)


def _exact_item(op: Any, arg: Any) -> frozenset[str] | None:
    if op is sc.LITERAL:
        return frozenset({chr(arg).lower()})
    if op is sc.SUBPATTERN:
        return _exact_items(arg[-1])
    if op is sc.IN and len(arg) <= 4 and all(o is sc.LITERAL for o, _ in arg):
        return frozenset(chr(c).lower() for _, c in arg)
    if op is sc.BRANCH:
        union: set[str] = set()
        for branch in arg[1]:
            found = _exact_items(branch)
            if found is None:
                return None
            union |= found
        return frozenset(union) if len(union) <= _MAX_EXACT else None
    if op in (sc.MAX_REPEAT, sc.MIN_REPEAT, sc.POSSESSIVE_REPEAT) and arg[1] <= 1:
        found = _exact_items(arg[2])  # an optional part: it is there or it is not
        if found is None:
            return None
        return found | {""} if arg[0] == 0 else found
    return None


def _of_items(items: Any) -> Needed:
    """A sequence: every item matches in turn, so any one item's requirement holds; runs
    of items whose every match is known (literals, and alternations of literals) join
    into the strings the run can be ("timeout " + "after|expired" -> "timeout after",
    "timeout expired"), which are rarer in a line than any part alone."""
    candidates: list[frozenset[str]] = []
    run: set[str] = {""}

    def close() -> None:
        nonlocal run
        if run != {""}:
            candidates.append(frozenset(run))
        run = {""}

    for op, arg in items:
        exact = _exact_item(op, arg)
        if exact is not None and len(run) * len(exact) <= _MAX_EXACT:
            run = {a + b for a in run for b in exact}
            continue
        close()
        if exact is not None:
            run = set(exact)
            continue
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


_WORD = re.compile(r"\w+")


def _whole_word(string: str) -> str | None:
    """The longest word of ``string`` with a non-word character on both sides inside it:
    wherever the string occurs, that word occurs as a whole word of the text."""
    inner = [
        m.group()
        for m in _WORD.finditer(string)
        if m.start() > 0 and m.end() < len(string) and len(m.group()) >= 3
    ]
    return max(inner, key=len) if inner else None


class LiteralIndex:
    """The needed strings of many patterns, each tested once per text: which of the
    patterns may match a text (by position in the sequence given). A string holding a
    whole word is tested only when the text has that word (one set lookup against the
    text's words, read in one pass), so the hundreds of strings cost a few substring
    tests per line, not one each."""

    def __init__(self, patterns: Sequence[Pattern[str]]) -> None:
        self._needs = [needed(p) for p in patterns]
        strings = sorted({s for n in self._needs if n for s in n})
        self._by_word: dict[str, list[str]] = {}
        self._plain: list[str] = []
        for string in strings:
            word = _whole_word(string)
            if word is None:
                self._plain.append(string)
            else:
                self._by_word.setdefault(word, []).append(string)

    def has_literal(self, k: int) -> bool:
        """The k-th pattern needs one of a set of strings (else it may match anything)."""
        return self._needs[k] is not None

    def may_match(self, lowered: str) -> list[int]:
        present = {s for s in self._plain if s in lowered}
        for word in set(_WORD.findall(lowered)) & self._by_word.keys():
            present.update(s for s in self._by_word[word] if s in lowered)
        return [i for i, n in enumerate(self._needs) if n is None or not n.isdisjoint(present)]
