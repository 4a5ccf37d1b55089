"""The executor seam: where a planned trial runs, and how its progress comes back.

The sweep (:func:`bringup.sweep.run_sweep`) asks the planner for up to ``capacity`` trials,
hands each to :meth:`Executor.run` as a :class:`TrialJob` and tells the planner each
:class:`TrialDone` as it finishes, in any order. An executor reports every stage change
through the job's :class:`TrialSink` (the sweep persists it and shows it) and returns the
final result; it never decides what runs next. A result is data: a failed trial returns
normally; ``run`` raises only for what must end the sweep (:class:`~bringup.errors.
PortBusyError`: see :func:`abort_if_port_busy`) and on cancellation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bringup.checks import ReferenceAnswers
from bringup.errors import PortBusyError
from bringup.plan.base import PlannedTrial
from bringup.verdict import Category, Stage, TrialResult


class TrialSink(Protocol):
    """Where a running trial's progress goes (the store row and the progress line)."""

    def stage(self, result: TrialResult, stage: Stage, message: str) -> None: ...

    def reused(self, result: TrialResult, prior_trial: str) -> None: ...


@dataclass
class TrialJob:
    planned: PlannedTrial
    index: int  # k of "trial k of n", in the order trials started
    trial_id: str
    config_key: str  # identity of the launch (store.launch_key): reuse looks it up
    sink: TrialSink
    # the answers candidates are compared with; None for the reference itself
    reference: ReferenceAnswers | None = None
    collect_reference: bool = False  # this trial's answers become the reference
    may_reuse: bool = False  # a verdict stored for the same launch may stand for this one
    decode_tok_s: float | None = None  # measured on the reference: sizes request timeouts


@dataclass
class TrialDone:
    result: TrialResult
    answers: ReferenceAnswers | None = None  # the reference's answers, when it collected them
    reused_from: str | None = None


class Executor(Protocol):
    @property
    def capacity(self) -> int:
        """How many trials this executor runs at once."""
        ...

    async def run(self, job: TrialJob) -> TrialDone:
        """Run one trial to its verdict; progress through ``job.sink``."""
        ...


def reuse_verdict(job: TrialJob, prior: TrialResult) -> TrialDone:
    """A stored verdict of the same launch and fingerprint stands for this job's trial."""
    reused = prior.model_copy(update={"trial_id": job.trial_id})
    reused.note = f"verdict reused from {prior.trial_id} (same configuration and fingerprint)"
    job.sink.reused(reused, prior.trial_id)
    return TrialDone(reused, reused_from=prior.trial_id)


def abort_if_port_busy(result: TrialResult) -> None:
    """A port pinned by the spec and served by someone else: no trial can run, stop now."""
    if result.failure and result.failure.category is Category.PORT_IN_USE and result.pid is None:
        raise PortBusyError(
            f"{result.failure.evidence[0]}; nothing was launched over it: {result.failure.remedy}."
        )
