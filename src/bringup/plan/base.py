"""The planner interface: a generator fed each trial's result.

``plan()`` yields a :class:`PlannedTrial`; the sweep runs it and ``send()``s back the
:class:`~bringup.verdict.TrialResult`. Configurations the planner decides not to run are
recorded in ``pruned`` with the trial that pruned them and why.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Literal

from bringup.spec import Config, Spec
from bringup.verdict import TrialResult

Purpose = Literal["reference", "explore", "short_bench", "full_bench", "repeat"]


@dataclass
class PlannedTrial:
    config: Config
    purpose: Purpose = "explore"
    bench_scale: float = 1.0  # fraction of the spec's benchmark (successive halving)


@dataclass
class Pruned:
    config: Config
    by_trial: str | None
    reason: str


PlanGenerator = Generator[PlannedTrial, TrialResult, None]


@dataclass
class SweepPlanner:
    """Base class; subclasses implement :meth:`plan`."""

    spec: Spec
    pruned: list[Pruned] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # decisions worth showing in the report

    name = "base"

    def plan(self) -> PlanGenerator:
        raise NotImplementedError
        yield  # pragma: no cover
