"""Reference first: the one wrapper that puts the reference trial before every other.

The accuracy gate compares each candidate with the reference configuration's answers, so
while no stored answers exist the reference must finish before any candidate starts. The
wrapper asks its planner for the first trial: if that is the reference, it runs alone;
otherwise the trial is pushed back and the reference runs alone first. Its result then
reaches the planner as a first look, so the planner's own turn for the reference needs
no second launch. Any planner works behind it, and it speaks the same ask/tell protocol.

With a ``control`` (a relaunch of the reference: it differs only in ``[checks] controls``),
the control runs alone right after a reference that passed, before any candidate: its
drift against the reference is the noise floor that candidates' thresholds come from
(:mod:`bringup.checks.paired_load`), so it must exist before they are judged. Its result
too reaches the planner as a first look.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bringup.plan.base import PlannedTrial, SweepPlanner
from bringup.spec import Config
from bringup.verdict import TrialResult


@dataclass
class ReferenceFirst:
    planner: SweepPlanner
    reference: Config
    needed: bool  # False: stored answers exist (or no accuracy gate); the planner alone steers
    control: Config | None = None  # run alone right after the reference (None: none to run)
    _running: PlannedTrial | None = field(default=None, init=False)

    def ask(self, n: int = 1) -> list[PlannedTrial]:
        if self._running is not None:
            return []  # every candidate waits for the reference's answers (and the floor)
        if not self.needed and self.control is not None:
            self._running = PlannedTrial(dict(self.control), purpose="explore")
            self.control = None
            return [self._running]
        if not self.needed:
            return self.planner.ask(n)
        self.needed = False
        first = self.planner.ask(1)
        if not first:
            return []
        if first[0].config == self.reference:
            self._running = first[0]  # the planner's own reference turn, alone
        else:
            self.planner.push_back(first[0])
            self._running = PlannedTrial(dict(self.reference), purpose="reference")
        return [self._running]

    def tell(self, planned: PlannedTrial, result: TrialResult) -> None:
        if planned is self._running:
            self._running = None
            if planned.config == self.reference and not result.passed:
                self.control = None  # no answers to measure a floor against: the planner decides
        self.planner.tell(planned, result)
