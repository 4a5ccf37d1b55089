"""Search planners: which configuration to try next, and what to prune."""

from bringup.errors import SpecError
from bringup.plan.base import PlanGenerator, PlannedTrial, Pruned, SweepPlanner
from bringup.plan.default import DefaultPlanner
from bringup.plan.grid import GridPlanner
from bringup.plan.winner import Winner, choose_winner
from bringup.spec import Spec

PLANNERS: dict[str, type[SweepPlanner]] = {"grid": GridPlanner, "default": DefaultPlanner}


def make_planner(spec: Spec, name: str | None = None) -> SweepPlanner:
    key = (name or spec.plan.planner).lower()
    if key not in PLANNERS:
        raise SpecError(f"unknown planner {key!r}; choose one of: {', '.join(sorted(PLANNERS))}.")
    return PLANNERS[key](spec=spec)


__all__ = [
    "PLANNERS",
    "DefaultPlanner",
    "GridPlanner",
    "PlanGenerator",
    "PlannedTrial",
    "Pruned",
    "SweepPlanner",
    "Winner",
    "choose_winner",
    "make_planner",
]
