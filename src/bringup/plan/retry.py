"""Retry transient failures once: the outermost wrapper of the ask/tell protocol.

A failure marked transient (``Failure.transient``: a request timed out or its connection
dropped while the engine lived, see :mod:`bringup.server.progress`; or the diagnosis found a
cause outside the configuration, such as a neighbour on the GPU freeing memory while vLLM
profiled its own, a rule with ``transient=True``) says something about
the moment, not the configuration. The wrapper keeps it from the planner, hands out the
same configuration once more (purpose ``retry``, with a longer request timeout), and tells
the planner the retry's result as the answer to the trial it asked for. A retry that is
transient again is told as it is: the pruning rules learn nothing from it either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from bringup.contention import benchmark_contention
from bringup.plan.base import PlannedTrial
from bringup.verdict import TrialResult


class Steering(Protocol):
    def ask(self, n: int = 1) -> list[PlannedTrial]: ...

    def tell(self, planned: PlannedTrial, result: TrialResult) -> None: ...


def retry_timeout_scale(first: TrialResult) -> float:
    """How much longer a retry waits: twice, more when others took the CPU (at most 10x)."""
    c = benchmark_contention(first.contention)
    left = c.left_share if c is not None else 1.0
    return min(10.0, 2.0 / max(left, 0.2))


@dataclass
class RetryTransient:
    inner: Steering
    _queued: list[PlannedTrial] = field(default_factory=list, init=False)
    _asked_for: dict[int, PlannedTrial] = field(default_factory=dict, init=False)

    def ask(self, n: int = 1) -> list[PlannedTrial]:
        out, self._queued = self._queued[:n], self._queued[n:]
        if len(out) < n:
            out += self.inner.ask(n - len(out))
        return out

    def will_retry(self, planned: PlannedTrial, result: TrialResult) -> bool:
        return (
            result.failure is not None and result.failure.transient and planned.purpose != "retry"
        )

    def tell(self, planned: PlannedTrial, result: TrialResult) -> None:
        if self.will_retry(planned, result):
            scale = retry_timeout_scale(result)
            retry = PlannedTrial(
                planned.config,
                purpose="retry",
                bench_scale=planned.bench_scale,
                timeout_scale=scale,
            )
            result.note = f"transient; retried once with {scale:.1f}x the request timeout"
            self._asked_for[id(retry)] = planned
            self._queued.append(retry)
            return
        self.inner.tell(self._asked_for.pop(id(planned), planned), result)
