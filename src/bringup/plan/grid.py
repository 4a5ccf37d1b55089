"""Grid planner: every configuration of the space in spec order, less ``[plan].exclude``."""

from __future__ import annotations

from typing import ClassVar

from bringup.plan.base import PlannedTrial, PlanSteps, Pruned, SweepPlanner
from bringup.plan.space import SearchSpace


class GridPlanner(SweepPlanner):
    name: ClassVar[str] = "grid"
    exact_total: ClassVar[bool] = True

    def steps(self) -> PlanSteps:
        space = SearchSpace(self.spec)
        # recorded before the first trial, so the planned total already leaves them out
        self.pruned.extend(Pruned(c, None, "excluded by [plan].exclude") for c in space.excluded)
        for config in space.candidates:
            yield PlannedTrial(config)
