"""The shape of a diagnosis rule.

A ``Rule`` is one error text an engine (or its runtime: CUDA, NCCL, Python, the kernel) really
prints, the category it implies, how decisive it is, and the remedy it implies. Weights:
5 names the cause outright ("CUDA out of memory"), 3-4 points at it, 1-2 is a consequence
("failed to load model") that only decides when nothing better is present.
A ``FrameRule`` weighs a Python exception by where it was raised: a ``KeyError`` inside
``load_weights`` means the checkpoint does not match the model code.
A rule keeps its regular expressions as text and compiles each on first use: every engine
folder's rule set is built when the engine registry loads (the CLI, a Ray worker), and most
processes never classify a failure.
A ``RuleSet`` is what one engine folder (or the generic set) contributes. A rule's id is
``<rule set engine>:<name>``; it is recorded with every failure it decides, together with the
flags the rule declares it implicates (every spelling the engine accepts for each), which the
pruner reads before it falls back to searching the evidence text for flag names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from bringup.verdict import Category


@dataclass(frozen=True)
class Rule:
    source: str  # the regular expression (``pattern``, compiled on first use)
    category: Category
    weight: float
    remedy: str | None = None  # may name groups of the pattern: "lower it to {est}"
    name: str = ""
    flags: tuple[str, ...] = ()  # the flags this error blames, every spelling of each
    # the failure came from outside the configuration (a neighbour on the device): retry it
    transient: bool = False
    # the rule counts only in a log that also shows this somewhere: the same consequence
    # ("failed to load model") means another cause once the log shows how far it got
    also_source: str | None = None  # ``also``
    # the line is a consequence ("failed to load model"): it may decide the category when
    # nothing names the cause, but then as a guess (as every rule below weight 2 does)
    consequence: bool = False
    case: bool = False  # the patterns match case-sensitively

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return rx(self.source, case=self.case)

    @cached_property
    def also(self) -> re.Pattern[str] | None:
        return None if self.also_source is None else rx(self.also_source, case=self.case)

    def remedy_for(self, match: re.Match[str]) -> str | None:
        if self.remedy is None:
            return None
        try:
            return self.remedy.format(**{k: v or "" for k, v in match.groupdict().items()})
        except (KeyError, IndexError):
            return self.remedy


@dataclass(frozen=True)
class FrameRule:
    exception_source: str  # ``exception``: matched against the exception type
    where_source: str  # ``where``: matched against "path:function" of any traceback frame
    category: Category
    weight: float
    remedy: str | None = None
    name: str = ""
    flags: tuple[str, ...] = ()

    @cached_property
    def exception(self) -> re.Pattern[str]:
        return rx(self.exception_source, case=True)

    @cached_property
    def where(self) -> re.Pattern[str]:
        return rx(self.where_source)


@dataclass(frozen=True)
class RuleSet:
    engine: str
    rules: tuple[Rule, ...]
    frame_rules: tuple[FrameRule, ...] = ()
    module_marker: str | None = None  # path fragment of the engine's own Python package
    # remedy used when the winning rule has none, per category
    remedies: dict[Category, str] = field(default_factory=dict)
    # start-up phases in the engine's own words, (phase, marker, remedy): when the engine
    # has them, a hang names the last of these its log reached (bringup.diagnose.hang)
    phases: tuple[tuple[str, re.Pattern[str], str], ...] = ()


# A line saying the engine worked around what it cannot do ("... not supported for this
# model; disabling it", "using the default") is the engine carrying on, not refusing. A
# rule whose pattern starts with this reads only lines without such words.
REFUSED_ONLY = (
    r"^(?!(?i:.*\b(?:disabl\w*|fall(?:s|ing)? back|defaulting|ignor\w*|skipp\w*|will use|"
    r"using (?:the )?default|instead)\b)).*?"
)


# A line that gives advice for a case ("if you are running out of memory, consider ...",
# "to avoid out of memory, ...") names what might happen, not what did. A rule whose
# pattern starts with this reads only lines where the words it looks for (``(?=...)`` of
# the caller's) are not under such a condition.
def not_advised(words: str) -> str:
    return (
        r"^(?!(?i:.*\b(?:if (?:you|it|the \w+) (?:are |is |run |get |hit )?\w*|to avoid|"
        r"prevent\w*|in case of)\b[^.;\n]{0,20}" + words + r")).*?"
    )


def rx(pattern: str, *, case: bool = False) -> re.Pattern[str]:
    return re.compile(pattern, 0 if case else re.IGNORECASE)


def rule(
    pattern: str,
    category: Category,
    weight: float,
    remedy: str | None = None,
    *,
    case: bool = False,
    name: str = "",
    flags: tuple[str, ...] = (),
    transient: bool = False,
    also: str | None = None,
    consequence: bool = False,
) -> Rule:
    return Rule(
        pattern,
        category,
        weight,
        remedy,
        name or pattern[:40],
        flags,
        transient,
        also,
        consequence,
        case,
    )


def frame_rule(
    exception: str,
    where: str,
    category: Category,
    weight: float,
    remedy: str | None = None,
    *,
    flags: tuple[str, ...] = (),
) -> FrameRule:
    return FrameRule(exception, where, category, weight, remedy, where[:40], flags)
