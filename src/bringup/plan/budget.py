"""The one budget of a sweep: how many trials it may launch and how long it may take.

The planner holds it (:class:`~bringup.plan.base.SweepPlanner`) and checks it before
handing out each trial, so every planner stops the same way and the sweep loop enforces
nothing of its own. Wall time is the larger of the clock since the planner started and
the trials' own measured time divided by how many ran at once: the second keeps a
planner driven without real processes (simulations, tests) on budget as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from bringup.spec import Spec


@dataclass(frozen=True)
class Budget:
    max_trials: int | None = None
    max_wall_s: float | None = None

    @classmethod
    def from_spec(cls, spec: Spec, max_trials: int | None = None) -> Budget:
        """The spec's ``[plan]`` budget; ``max_trials`` (e.g. from the command line) wins."""
        return cls(max_trials or spec.plan.max_trials, spec.plan.max_wall_s)

    def spent(self, launched: int, wall_s: float) -> str | None:
        """Why no further trial may start, or None while the budget lasts."""
        if self.max_trials is not None and launched >= self.max_trials:
            return f"trial budget of {self.max_trials} spent"
        if self.max_wall_s is not None and wall_s >= self.max_wall_s:
            return f"wall-time budget of {self.max_wall_s:g} s spent"
        return None
