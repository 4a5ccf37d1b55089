"""Greedy answers under load against the same prompts at idle, and against known answers.

A sentinel is asked greedily once at idle before the load and once beside every load
level. On an engine that is correct under load both answers come from the same greedy
decode, so they agree; an engine whose sampling turns hot after a while, or that samples
non-greedily once other requests share the batch, answers differently. Two rules, each
naming the prompt and both answers:

- a sentinel that is a known answer must still be right under load (``wrong_answer``);
- a greedy answer under load must agree with the idle answer (``accuracy_regression``).

"Agree" allows one thing: batched arithmetic is not bit-identical to unbatched
arithmetic on most engines, so where the top two next tokens are nearly tied, a greedy
decode may take the other branch late in the answer. The answers must then share at least
``MIN_SHARED`` of the idle answer's text before they part. A divergence earlier than that
(a different first word, as hot sampling gives) is a failure; the paired reference
comparison under load is what measures finer drift against a noise floor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bringup.checks.garbage import quote
from bringup.checks.known_answers import KnownAnswer

MIN_SHARED = 0.5  # fraction of the idle answer's characters both answers must share


@dataclass
class SentinelFinding:
    rule: str  # "known_answer" or "idle_mismatch"
    prompt: str
    idle: str | None
    under_load: str
    evidence: str


def shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def agrees(idle: str, under_load: str) -> bool:
    """True when the load answer is the idle answer up to a late near-tie divergence."""
    a, b = idle.strip(), under_load.strip()
    if a == b:
        return True
    if not a or not b:
        return False
    return shared_prefix(a, b) >= MIN_SHARED * len(a)


def judge_sentinels(
    at: str,
    prompts: Sequence[str],
    under_load: Sequence[str | None],
    idle: Sequence[str | None],
    known: Mapping[str, KnownAnswer],
) -> list[SentinelFinding]:
    """Findings for one load level (``at`` names it in the evidence)."""
    out: list[SentinelFinding] = []
    for i, prompt in enumerate(prompts):
        got = under_load[i] if i < len(under_load) else None
        calm = idle[i] if i < len(idle) else None
        if got is None:  # a failed request is counted with the level's errors
            continue
        where = f"at concurrency {at}, prompt {quote(prompt, 60)}"
        ka = known.get(prompt)
        if ka is not None and not ka.judge(got):
            out.append(
                SentinelFinding(
                    "known_answer",
                    prompt,
                    calm,
                    got,
                    f"{where}: expected {ka.expectation()}, got {quote(got)} under load "
                    f"(idle answer {quote(calm or '')})",
                )
            )
            continue
        if calm is not None and not agrees(calm, got):
            out.append(
                SentinelFinding(
                    "idle_mismatch",
                    prompt,
                    calm,
                    got,
                    f"{where}: greedy answer changed under load: idle {quote(calm)}, "
                    f"under load {quote(got)}",
                )
            )
    return out
