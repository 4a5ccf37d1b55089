"""Search planners: which configuration to try next, and what to prune."""

from bringup.errors import SpecError
from bringup.plan.base import WAIT, PlanGenerator, PlannedTrial, PlanSteps, Pruned, SweepPlanner
from bringup.plan.budget import Budget
from bringup.plan.default import DefaultPlanner
from bringup.plan.grid import GridPlanner
from bringup.plan.reference import ReferenceFirst
from bringup.plan.winner import Winner, choose_winner
from bringup.spec import Spec

PLANNERS: dict[str, type[SweepPlanner]] = {"grid": GridPlanner, "default": DefaultPlanner}


def make_planner(spec: Spec, name: str | None = None, budget: Budget | None = None) -> SweepPlanner:
    """The named planner (the spec's by default) under ``budget`` (the spec's by default)."""
    key = (name or spec.plan.planner).lower()
    if key not in PLANNERS:
        raise SpecError(f"unknown planner {key!r}; choose one of: {', '.join(sorted(PLANNERS))}.")
    return PLANNERS[key](spec=spec, budget=budget)


__all__ = [
    "PLANNERS",
    "WAIT",
    "Budget",
    "DefaultPlanner",
    "GridPlanner",
    "PlanGenerator",
    "PlanSteps",
    "PlannedTrial",
    "Pruned",
    "ReferenceFirst",
    "SweepPlanner",
    "Winner",
    "choose_winner",
    "make_planner",
]
