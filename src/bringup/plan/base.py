"""The planner interface: ask for up to N trials, tell each result back, in any order.

``ask(n)`` returns up to ``n`` :class:`PlannedTrial` to start now. An empty answer means
"wait for a result" while trials are in flight, and "done" when none are. ``tell(planned,
result)`` hands back the result of a trial ``ask`` returned, in whatever order trials
finish; a result the planner did not ask for (the reference run first, see
:mod:`bringup.plan.reference`) is kept as that configuration's first look.

A planner writes :meth:`SweepPlanner.steps`, a generator of trials that yields
:data:`WAIT` where its next choice needs results still in flight, and
:meth:`SweepPlanner.observe`, which takes each result. The base class applies the one
:class:`~bringup.plan.budget.Budget`, answers a first look at a configuration that already
has a result without launching it again, and keeps ``pruned`` and ``notes``: configurations
not run, with the trial that pruned them and why, and the decisions worth a report line.

``plan()`` is the sequential form (one trial in flight): a generator fed each result by
``send()``, for simulations and tests.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from bringup.plan.budget import Budget
from bringup.plan.space import flags_key
from bringup.plan.winner import Winner, choose_winner
from bringup.spec import Config, Spec
from bringup.verdict import TrialResult

# "retry": a second look after a transient failure (plan.retry), never a planner's own
Purpose = Literal["reference", "explore", "short_bench", "full_bench", "repeat", "retry"]
# first looks at a configuration: one result per configuration answers them all
FIRST_LOOK: tuple[Purpose, ...] = ("explore", "reference")


@dataclass
class PlannedTrial:
    config: Config
    purpose: Purpose = "explore"
    bench_scale: float = 1.0  # fraction of the spec's benchmark (successive halving)
    timeout_scale: float = 1.0  # a retry after a slow response waits proportionally longer


@dataclass
class Pruned:
    config: Config
    by_trial: str | None
    reason: str


PlanGenerator = Generator[PlannedTrial, TrialResult, None]
WAIT = None  # yielded by steps(): the next choice needs results still in flight
PlanSteps = Generator[PlannedTrial | None, None, None]


@dataclass
class SweepPlanner:
    """Base class; subclasses implement :meth:`steps` and, to learn, :meth:`observe`."""

    spec: Spec
    pruned: list[Pruned] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # decisions worth showing in the report
    budget: Budget | None = None  # None: the spec's [plan] budget

    name: ClassVar[str] = "base"
    # True when the number of configurations (less pruned ones) is the number that will run
    exact_total: ClassVar[bool] = False

    _steps: PlanSteps | None = field(default=None, init=False, repr=False)
    _pending: list[PlannedTrial] = field(default_factory=list, init=False, repr=False)
    _in_flight: list[PlannedTrial] = field(default_factory=list, init=False, repr=False)
    # (index in notes, why, trials running) of a budget stop
    _stop_note: tuple[int, str, int] | None = field(default=None, init=False, repr=False)
    _first_looks: dict[Any, TrialResult] = field(default_factory=dict, init=False, repr=False)
    _observed: list[tuple[PlannedTrial, TrialResult]] = field(
        default_factory=list, init=False, repr=False
    )
    _launched: int = field(default=0, init=False, repr=False)
    _timed_s: float = field(default=0.0, init=False, repr=False)
    _width: int = field(default=1, init=False, repr=False)  # most trials in flight at once
    _started: float | None = field(default=None, init=False, repr=False)
    _finished: bool = field(default=False, init=False, repr=False)

    # ---- what a planner writes ---------------------------------------------------------

    def steps(self) -> PlanSteps:
        """Trials in the planner's order; :data:`WAIT` where results in flight are needed."""
        raise NotImplementedError
        yield  # pragma: no cover

    def observe(self, planned: PlannedTrial, result: TrialResult) -> None:
        """Learn from one result (any order); the grid needs nothing."""

    # ---- what the sweep drives ---------------------------------------------------------

    @property
    def limits(self) -> Budget:
        return self.budget if self.budget is not None else Budget.from_spec(self.spec)

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def ask(self, n: int = 1) -> list[PlannedTrial]:
        """Up to ``n`` trials to start now; empty when waiting for results or done."""
        if self._started is None:
            self._started = time.monotonic()
        if self._steps is None:
            self._steps = self.steps()
        out: list[PlannedTrial] = []
        while len(out) < n and not self._finished:
            item = self._next_step()
            if item is None:
                break
            seen = self._first_looks.get(flags_key(item.config))
            if seen is not None and item.purpose in FIRST_LOOK:
                self._record(item, seen)  # already looked at: no second launch
                continue
            why = self.limits.spent(self._launched, self._wall_s())
            if why is not None:
                self._stop(why)
                break
            self._launched += 1
            self._in_flight.append(item)
            self._width = max(self._width, len(self._in_flight))
            out.append(item)
        return out

    def tell(self, planned: PlannedTrial, result: TrialResult) -> None:
        """The result of ``planned``, whenever it finishes."""
        if self._started is None:
            self._started = time.monotonic()
        for i, p in enumerate(self._in_flight):
            if p is planned:
                del self._in_flight[i]
                self._record(planned, result)
                if self._stop_note is not None:
                    self.notes[self._stop_note[0]] = self._budget_note()
                return
        # not asked for (the reference run first): a launch of this sweep all the same
        self._launched += 1
        self._first_looks.setdefault(flags_key(planned.config), result)

    def push_back(self, planned: PlannedTrial) -> None:
        """Take back a trial ``ask`` returned and not started; the next ``ask`` offers it
        again, checked against the budget and the first looks as if new."""
        for i, p in enumerate(self._in_flight):
            if p is planned:
                del self._in_flight[i]
                self._launched -= 1
                self._pending.insert(0, planned)
                return
        raise ValueError("push_back of a trial that is not in flight")

    def plan(self) -> PlanGenerator:
        """The sequential form: yield one trial, receive its result by ``send()``."""
        while batch := self.ask(1):
            result = yield batch[0]
            self.tell(batch[0], result)

    def planned_total(self) -> tuple[int, bool]:
        """(Trials this sweep will run at most, whether exactly that many will run.)"""
        total = len(self.spec.configs()) - len(self.pruned)
        limit = self.limits.max_trials
        bound = max(1, min(total, limit) if limit else total)
        return bound, self.exact_total and not self.limits.max_wall_s

    def observed(self) -> list[tuple[PlannedTrial, TrialResult]]:
        """Every trial told back so far with its result, in the order they came."""
        return list(self._observed)

    def best(self) -> Winner | None:
        """The winner among the results so far (short benchmarks count only where no full one)."""
        results = []
        for planned, result in self._observed:
            r = result.model_copy(deep=True)
            r.flags = dict(planned.config)
            r.metrics.setdefault("bench_scale", planned.bench_scale)
            results.append(r)
        # trials the sweep ran before asking (the reference first, its control) count even
        # where this planner never offers their configuration ([[candidates]] without it):
        # the sweep's winner is chosen over every result, so the best named here must be too
        recorded = {id(result) for _, result in self._observed}
        for result in self._first_looks.values():
            if id(result) not in recorded:
                results.append(result.model_copy(deep=True))
        return choose_winner(results, self.spec)

    # ---- bookkeeping -------------------------------------------------------------------

    def _next_step(self) -> PlannedTrial | None:
        if self._pending:
            return self._pending.pop(0)
        assert self._steps is not None
        try:
            item = next(self._steps)
        except StopIteration:
            self._finished = True
            return None
        if item is WAIT and not self._in_flight:
            raise RuntimeError(f"the {self.name} planner waits for results with none in flight")
        return item

    def _record(self, planned: PlannedTrial, result: TrialResult) -> None:
        self._first_looks.setdefault(flags_key(planned.config), result)
        self._timed_s += _elapsed(result)
        self._observed.append((planned, result))
        self.observe(planned, result)

    def _wall_s(self) -> float:
        clock = time.monotonic() - self._started if self._started is not None else 0.0
        return max(clock, self._timed_s / self._width)

    def _stop(self, why: str) -> None:
        self._finished = True
        if self._steps is not None:
            self._steps.close()
        # trials already running finish and count: the note is rewritten as each reports,
        # so the best it names is the one the sweep's winner is chosen from
        self._stop_note = (len(self.notes), why, len(self._in_flight))
        self.notes.append(self._budget_note())

    def _budget_note(self) -> str:
        assert self._stop_note is not None
        _, why, running = self._stop_note
        if running:
            left = len(self._in_flight)
            why += (
                f"; {running} trial(s) already running were let finish"
                if not left
                else f"; {left} of {running} trial(s) already running still to finish"
            )
        best = self.best()
        return (
            f"{why}; best proven so far: {best.trial_id} ({best.reason}); {self._not_done()}"
            if best
            else f"{why}; no configuration proven yet; {self._not_done()}"
        )

    def _not_done(self) -> str:
        """What a budget stop left undone: untried configurations, repeats of the best."""
        tried = {flags_key(p.config) for p, _ in self._observed} | set(self._first_looks)
        untried = max(0, len(self.spec.configs()) - len(tried) - len(self.pruned))
        parts = [f"{untried} configuration(s) untried"]
        measured: dict[Any, int] = {}
        for planned, result in self._observed:
            if result.passed and planned.bench_scale >= 1.0:
                key = flags_key(planned.config)
                measured[key] = measured.get(key, 0) + 1
        repeated = sum(1 for n in measured.values() if n >= 2)
        top = self.spec.plan.repeat_top
        if top and repeated < min(top, len(measured)):
            parts.append(
                f"repeats of the best {top} (plan.repeat_top) not run: "
                f"{repeated} configuration(s) measured more than once"
            )
        return "not done: " + ", ".join(parts)


def _elapsed(result: TrialResult) -> float:
    if "total" in result.timings:
        return float(result.timings["total"])
    return float(sum(result.timings.values()))
