"""The answer of the classifier: category, the decisive log lines, a remedy, a confidence,
the id of the rule that decided it and the flags that rule implicates.

``to_failure`` turns it into the trial's :class:`~bringup.verdict.Failure`, keeping every
field, once the stage is known. ``stage_reached`` is set for hangs (the start-up phase the
log last showed); ``to_dict`` is the JSON shape ``bringup diagnose --json`` prints.

Confidence is calibrated on the fit corpus (``bench/diagnose_eval.py`` prints accuracy by
band): below :data:`GUESS_BELOW` the diagnosis is a guess, and says so (``guessing`` in
JSON, "guessing" in text). A log with no failure signal at all and no known exit is
``signal=False``: it is shown as ``unknown`` (``category`` then holds what a trial records
for an engine that failed without a reason, ``runtime_crash``), never as a cause it has no
evidence for. ``learned`` marks a diagnosis the learned fallback made where no rule was sure
(:mod:`bringup.diagnose.learned`): it names no rule and gives the category's generic remedy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.verdict import Category, Failure, Stage

GUESS_BELOW = 0.5  # calibrated: diagnoses below this are right less often than not
UNKNOWN = "unknown"  # the label of a log without any failure signal


@dataclass
class Diagnosis:
    category: Category
    evidence: list[str] = field(default_factory=list)  # decisive lines, verbatim
    remedy: str | None = None
    confidence: float = 0.5
    stage_reached: str | None = None  # hangs: the start-up phase the log last showed
    silent_s: float | None = None  # hangs: how long the log had been silent
    rule: str | None = None  # id of the deciding rule ("<rule set>:<name>", "exit:SIGKILL", ...)
    flags: list[str] = field(default_factory=list)  # flags the deciding rules implicate
    signal: bool = True  # False: nothing in the log or the exit status says what failed
    transient: bool = False  # caused from outside the configuration: worth one retry
    learned: bool = False  # decided by the learned fallback (no rule was sure), not a rule

    @property
    def label(self) -> str:
        """What is shown: the category, or ``unknown`` when the log carried no signal."""
        return self.category.value if self.signal else UNKNOWN

    @property
    def guessing(self) -> bool:
        return not self.signal or self.confidence < GUESS_BELOW

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.label,
            "evidence": list(self.evidence),
            "remedy": self.remedy,
            "confidence": round(self.confidence, 2),
            "guessing": self.guessing,
            "transient": self.transient,
            "learned": self.learned,
        }

    def explain(self) -> str:
        """A short human explanation, a few lines."""
        if not self.signal:
            head = f"{UNKNOWN}: no failure signal in the log (confidence {self.confidence:.2f})"
        elif self.guessing:
            head = f"{self.label} (guessing: confidence {self.confidence:.2f})"
        else:
            head = f"{self.label} (confidence {self.confidence:.2f})"
        out = [head]
        if self.stage_reached:
            out.append(f"last start-up phase seen: {self.stage_reached}")
        if self.silent_s is not None:
            out.append(f"log silent for {self.silent_s:.0f} s")
        if self.evidence:
            out.append("evidence:")
            out.extend(f"  {line}" for line in self.evidence)
        if self.remedy:
            out.append(f"try: {self.remedy}")
        if self.rule:
            out.append(f"decided by rule {self.rule}")
        elif self.learned:
            out.append("decided by the learned fallback: no rule was sure")
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
            rule=self.rule,
            confidence=self.confidence,
            flags=list(self.flags),
            transient=self.transient,
        )
