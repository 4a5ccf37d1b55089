"""A reference's answers, as carried between trials, stored and sent to Ray workers.

Apart from :mod:`bringup.checks.accuracy` (which collects and compares them) so that a
trial holding a reference loads neither the comparisons nor the HTTP client to hold it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bringup.http.completions import Completion


@dataclass
class ReferenceAnswers:
    """Greedy answers to the accuracy prompts, and optionally the forced scores of another's."""

    prompts: list[str]
    max_tokens: int
    answers: list[Completion]
    forced: list[list[float]] | None = None  # this server's logprobs of the reference tokens
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompts": self.prompts,
            "max_tokens": self.max_tokens,
            "answers": [a.to_dict() for a in self.answers],
            "forced": [[_enc(x) for x in row] for row in self.forced] if self.forced else None,
            "meta": self.meta,
        }

    def part(self, start: int, stop: int) -> ReferenceAnswers:
        """The answers to prompts ``start`` to ``stop`` (forced scores with them)."""
        forced = self.forced[start:stop] if self.forced is not None else None
        sl = slice(start, stop)
        return ReferenceAnswers(self.prompts[sl], self.max_tokens, self.answers[sl], forced)

    def joined(self, more: ReferenceAnswers) -> ReferenceAnswers:
        """These answers followed by ``more`` (to the prompts after these)."""
        forced = (self.forced or []) + (more.forced or []) if self.forced or more.forced else None
        return ReferenceAnswers(
            self.prompts + more.prompts, self.max_tokens, self.answers + more.answers, forced
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReferenceAnswers:
        forced = d.get("forced")
        return cls(
            prompts=[str(p) for p in d["prompts"]],
            max_tokens=int(d["max_tokens"]),
            answers=[Completion.from_dict(a) for a in d["answers"]],
            forced=[[_dec(x) for x in row] for row in forced] if forced else None,
            meta=dict(d.get("meta") or {}),
        )


def _enc(x: float) -> float | None:
    return None if not math.isfinite(x) else x  # JSON has no -inf/nan


def _dec(x: Any) -> float:
    return float(x) if isinstance(x, int | float) else -math.inf
