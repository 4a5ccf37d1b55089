"""Deterministic text and log-probabilities for the simulated engine.

The same prompt always gets the same tokens and log-probabilities, so a differential
check against the reference configuration agrees exactly unless the world says the
configuration drifts. Prompts containing a known question (the world's ``[answers]``
first, then a few built-in ones) are answered correctly.
"""

from __future__ import annotations

import hashlib
import re

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


def continuation(prompt: str, n: int, world: World, agreement: float = 1.0) -> list[str]:
    """``n`` tokens continuing ``prompt``; a share ``1 - agreement`` of them differ."""
    answer = None
    for question, text in {**world.answers, **BUILTIN_ANSWERS}.items():
        if question.lower() in prompt.lower():
            answer = text
            break
    base = re.findall(r"\s*\S+", answer) if answer is not None else []
    while len(base) < n:
        base.append(" " + _WORDS[_h(prompt, len(base)) % len(_WORDS)])
    out = base[:n]
    if agreement < 1.0:
        for i in range(len(out)):
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
