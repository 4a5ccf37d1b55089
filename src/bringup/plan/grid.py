"""Grid planner: every combination of the space, in spec order, nothing pruned."""

from __future__ import annotations

from bringup.plan.base import PlanGenerator, PlannedTrial, SweepPlanner


class GridPlanner(SweepPlanner):
    name = "grid"

    def plan(self) -> PlanGenerator:
        for config in self.spec.configs():
            yield PlannedTrial(config)
