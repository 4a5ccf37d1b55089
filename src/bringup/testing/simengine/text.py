"""Deterministic text and log-probabilities for the simulated engine.

The same prompt always gets the same tokens and log-probabilities, so a differential
check against the reference configuration agrees exactly unless the world says the
configuration drifts. Known questions are answered correctly: a prompt containing one of
the world's ``[answers]``, a prompt of bringup's built-in known-answer suite
(``bringup/checks/suite.toml``, answered from each entry's own expectation), or one of a
few built-in questions. A drift moves every log-probability but changes only the free
continuation, never a known answer: the greedy answer the model is sure of survives a
slightly noisier KV cache. A configuration that breaks answers is a ``wrong_answer`` or
``garbage`` outcome of the world.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache

from bringup.checks.known_answers import KnownAnswer, builtin_suite
from bringup.testing.simengine.world import World

BUILTIN_ANSWERS = {
    "capital of France": " Paris. It is also the largest city in France.",
    "capital of Japan": " Tokyo.",
    "2 + 2": " 4",
    "2+2": " 4",
    "1, 2, 3, 4, 5,": " 6, 7, 8, 9, 10, 11, 12",
    "opposite of hot": " cold",
}
_WORDS = (
    "the",
    "model",
    "serves",
    "tokens",
    "quickly",
    "and",
    "kernel",
    "runs",
    "on",
    "every",
    "layer",
    "while",
    "scheduler",
    "keeps",
    "a",
    "batch",
    "of",
    "requests",
    "warm",
    "in",
    "cache",
    "so",
    "each",
    "step",
    "moves",
    "data",
    "between",
    "memory",
    "compute",
    "with",
    "care",
)


def _h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:12], 16)


# A regex expectation that is a literal answer: anchors, \s*, \b and escaped punctuation
# around plain words (^\s*Paris\b, ^\s*6,\s*7).
_REGEX_SYNTAX = re.compile(r"[][(){}|*+?.$^\\]")


def _literal(pattern: str) -> str | None:
    text = pattern.removeprefix("(?i)").removeprefix("^").replace("\\b", "")
    text = re.sub(r"\\s[*+]", " ", text)
    if _REGEX_SYNTAX.search(re.sub(r"\\[^\w\s]", "", text)):
        return None  # more than a literal: alternatives, classes, repetitions
    text = re.sub(r"\\([^\w\s])", r"\1", text)
    return " ".join(text.split()) or None


def answer_text(ka: KnownAnswer) -> str | None:
    """A continuation that meets ``ka``'s expectation, or None when none can be read off it."""
    if ka.kind == "numeric":
        text: str | None = f" {float(ka.expected):g}"
    elif ka.kind == "regex":
        literal = _literal(str(ka.expected))
        text = f" {literal}" if literal else None
    else:
        text = f" {ka.expected}"
    return text if text is not None and ka.judge(text) else None


@cache
def suite_answers() -> dict[str, str]:
    """Prompt -> right continuation, for every entry of bringup's built-in known answers."""
    out: dict[str, str] = {}
    for ka in builtin_suite()[0]:
        text = answer_text(ka)
        if text is not None:
            out[ka.prompt.strip()] = text
    return out


def known_answer(prompt: str, world: World) -> str | None:
    """The answer the simulated model knows for ``prompt``, if any."""
    low = prompt.lower()
    for question, text in world.answers.items():
        if question.lower() in low:
            return text
    suite = suite_answers().get(prompt.strip())
    if suite is not None:
        return suite
    for question, text in BUILTIN_ANSWERS.items():
        if question.lower() in low:
            return text
    return None


def continuation(prompt: str, n: int, world: World, agreement: float = 1.0) -> list[str]:
    """``n`` tokens continuing ``prompt``; a share ``1 - agreement`` of the tokens after the
    known answer (all of them when there is none) differ."""
    answer = known_answer(prompt, world)
    base = re.findall(r"\s*\S+", answer) if answer is not None else []
    kept = len(base)  # a drift leaves the known answer alone
    while len(base) < n:
        base.append(" " + _WORDS[_h(prompt, len(base)) % len(_WORDS)])
    out = base[:n]
    if agreement < 1.0:
        for i in range(kept, len(out)):
            if (_h("agree", prompt, i) % 10_000) / 10_000 >= agreement:
                out[i] = " " + _WORDS[_h("drift", prompt, i) % len(_WORDS)] + "s"
    return out


def token_logprob(prompt: str, i: int, drift: float = 0.0) -> float:
    """The log-probability of token ``i``; ``drift`` shifts it by that much on average."""
    base = -0.02 - (_h("lp", prompt, i) % 1500) / 1000.0
    if drift:
        # Every token moves by exactly ``drift``: up when that stays a log-probability.
        up = _h("sign", prompt, i) % 2 == 1 and base + drift < 0
        base = base + drift if up else base - drift
    return round(base, 6)
