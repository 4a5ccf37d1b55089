"""The answer of the classifier: category, the decisive log lines, a remedy, a confidence.

``stage_reached`` is set for hangs (the start-up phase the log last showed); ``to_dict`` is
the JSON shape ``bringup diagnose --json`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.verdict import Category, Failure, Stage


@dataclass
class Diagnosis:
    category: Category
    evidence: list[str] = field(default_factory=list)  # decisive lines, verbatim
    remedy: str | None = None
    confidence: float = 0.5
    stage_reached: str | None = None  # hangs: the start-up phase the log last showed
    silent_s: float | None = None  # hangs: how long the log had been silent

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category.value,
            "evidence": list(self.evidence),
            "remedy": self.remedy,
            "confidence": round(self.confidence, 2),
        }

    def explain(self) -> str:
        """A short human explanation, a few lines."""
        out = [f"{self.category.value} (confidence {self.confidence:.2f})"]
        if self.stage_reached:
            out.append(f"last start-up phase seen: {self.stage_reached}")
        if self.silent_s is not None:
            out.append(f"log silent for {self.silent_s:.0f} s")
        if self.evidence:
            out.append("evidence:")
            out.extend(f"  {line}" for line in self.evidence)
        if self.remedy:
            out.append(f"try: {self.remedy}")
        return "\n".join(out)

    def to_failure(self, stage: Stage, detail: str | None = None) -> Failure:
        if detail is None and self.stage_reached:
            detail = f"no progress while {self.stage_reached}"
        return Failure(
            stage=stage,
            category=self.category,
            evidence=list(self.evidence),
            remedy=self.remedy,
            detail=detail,
        )
