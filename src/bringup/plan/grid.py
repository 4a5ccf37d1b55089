"""Grid planner: every combination of the space, in spec order, nothing pruned."""

from __future__ import annotations

from typing import ClassVar

from bringup.plan.base import PlannedTrial, PlanSteps, SweepPlanner


class GridPlanner(SweepPlanner):
    name: ClassVar[str] = "grid"
    exact_total: ClassVar[bool] = True

    def steps(self) -> PlanSteps:
        for config in self.spec.configs():
            yield PlannedTrial(config)
