"""The default planner: reference first, risk order, pruning from verdicts, model-guided.

1. The reference configuration, then every configuration one departure away from it, most
   mature values first (screening: each value's effect and failures, pinned to one cause).
2. Each failure becomes a :class:`~bringup.plan.pruning.PruneRule`; every untried
   configuration it matches is recorded in ``pruned`` with the trial and the reason.
3. The rest in order of predicted objective (a main-effects model fitted to what passed),
   lowest risk first among equals; the search stops when no untried configuration can beat
   the best measured one by more than the model's uncertainty (noise plus interactions),
   and skips configurations predicted to break ``[objective].require`` by a clear margin.
4. With ``[plan].halving`` the exploration runs a short benchmark and the best third get the
   full one. Then the best are measured again until the winner is decided, each up to
   ``[plan].max_samples`` times, within a repeat budget (:mod:`bringup.plan.decide`;
   ``[plan].repeat_top = k``
   gives the best k a second measurement first), and the winner is chosen with the
   measured noise (:mod:`bringup.plan.winner`).
Trials may be in flight together: a configuration handed out counts as tried, results are
absorbed in whatever order they come, and halving and repeats wait for every result before
them. Budgets (:class:`~bringup.plan.budget.Budget`, applied by the base class) end the search
early; the notes then name the best configuration proven so far.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bringup.plan.base import WAIT, PlannedTrial, PlanSteps, Pruned, Purpose, SweepPlanner
from bringup.plan.decide import decide_steps, repeat_budget
from bringup.plan.model import EffectModel
from bringup.plan.pruning import PruneRule, rule_from, widen
from bringup.plan.space import SearchSpace, flags_key
from bringup.plan.winner import objective_name, requirement_failures
from bringup.spec import Config
from bringup.student import Z95
from bringup.verdict import TrialResult

_REQ_OPS = ("<=", ">=", "<", ">")


@dataclass
class _Tried:
    config: Config
    result: TrialResult
    scale: float


@dataclass
class DefaultPlanner(SweepPlanner):
    name = "default"

    eta: int = 3  # successive halving: short bench is 1/eta, the best 1/eta go on
    confidence_z: float = 2.0  # how many standard deviations of optimism before giving up
    noise_floor: float = 0.03  # relative noise assumed until measurements say otherwise
    tried: list[_Tried] = field(default_factory=list)
    rules: list[PruneRule] = field(default_factory=list)

    def steps(self) -> PlanSteps:
        self._space = SearchSpace(self.spec)
        self._metric, self._larger = objective_name(self.spec)
        self._model = EffectModel(list(self.spec.axes()))
        self._req_models = {
            req: EffectModel(list(self.spec.axes())) for req in self.spec.objective.require
        }
        self._pruned_keys: set[Any] = set()
        self._tried_keys: set[Any] = set()
        # Candidates in risk order with their identities, computed once.
        self._ranked = [(flags_key(c), c) for c in self._space.by_risk(self._space.candidates)]
        for config in self._space.excluded:
            self._prune(config, None, "excluded by [plan].exclude")
        halving = self.spec.plan.halving
        explore_scale = 1.0 / self.eta if halving else 1.0
        explore_purpose: Purpose = "short_bench" if halving else "explore"

        while True:
            nxt, why_not = self._next_explore()
            if nxt is None:
                if self.in_flight:  # results still out may open or close candidates
                    yield WAIT
                    continue
                if why_not:
                    self.notes.append(why_not)
                break
            config = nxt
            # a configuration in flight counts as tried: never offered twice, never pruned
            self._tried_keys.add(flags_key(config))
            ref = not self._space.departures(config)
            purpose: Purpose = "reference" if ref else explore_purpose
            yield PlannedTrial(config, purpose, explore_scale)

        # halving and repeats rank what exploration measured: all of it
        yield from self._drain()
        if halving:
            for config in self._top(
                math.ceil(len(self._passing()) / self.eta), scale=explore_scale
            ):
                yield PlannedTrial(config, "full_bench", 1.0)
            yield from self._drain()
        first = self._top(self.spec.plan.repeat_top, scale=1.0)
        cap = self.spec.plan.max_samples
        budget = repeat_budget(len(self._space.candidates), cap, self.spec.plan.max_repeats)
        added = yield from decide_steps(self, first, cap, budget)
        yield from self._drain()
        best = self.best()
        if best is not None:
            self.notes.append(
                f"winner {best.trial_id}: {best.reason}" + (f"; {added}" if added else "")
            )

    def observe(self, planned: PlannedTrial, result: TrialResult) -> None:
        self._absorb(planned.config, result, planned.bench_scale)

    def _drain(self) -> PlanSteps:
        while self.in_flight:
            yield WAIT

    # ---- bookkeeping -------------------------------------------------------------------

    def _absorb(self, config: Config, result: TrialResult, scale: float) -> None:
        self.tried.append(_Tried(dict(config), result, scale))
        self._tried_keys.add(flags_key(config))
        if result.passed:
            score = self._log_score(result.metrics.get(self._metric))
            if score is not None and scale >= 1.0 / self.eta:
                self._model.observe(config, score)
                self._model.fit()
            for req, model in self._req_models.items():
                name = _req_parts(req)[0]
                value = result.metrics.get(name)
                if isinstance(value, int | float) and value > 0:
                    model.observe(config, math.log(value))
                    model.fit()
            return
        rule = rule_from(result, config, self._space, self.spec.checks.tolerate)
        if rule is None:
            return
        wider = widen(rule, self.rules, self._space)
        self.rules.append(rule)
        for r in [rule] if wider is None else [rule, wider]:
            if r is wider:
                self.rules.append(r)
            for key, cand in self._ranked:
                if (
                    key not in self._tried_keys
                    and key not in self._pruned_keys
                    and r.matches(cand, self._space)
                ):
                    self._prune(cand, r.by_trial, r.reason)

    def _prune(self, config: Config, by_trial: str | None, reason: str) -> None:
        key = flags_key(config)
        if key in self._pruned_keys:
            return
        self._pruned_keys.add(key)
        self.pruned.append(Pruned(dict(config), by_trial, reason))

    def _log_score(self, value: Any) -> float | None:
        if not isinstance(value, int | float) or value <= 0:
            return None
        return math.log(value) if self._larger else -math.log(value)

    def _passing(self) -> list[_Tried]:
        return [t for t in self.tried if t.result.passed]

    # ---- choosing the next configuration -----------------------------------------------

    def _open(self) -> list[Config]:
        """Untried, unpruned candidates in risk order."""
        return [
            c for k, c in self._ranked if k not in self._tried_keys and k not in self._pruned_keys
        ]

    def _next_explore(self) -> tuple[Config | None, str | None]:
        """The next configuration to explore, or None and why exploring should stop."""
        ranked = self._open()
        if not ranked:
            return None, None
        open_ = ranked
        if len(self._space.departures(ranked[0])) <= 1 or not self._model.observations:
            return ranked[0], None
        best = max((s for _, s in self._model.observations), default=None)
        sd = self._uncertainty()
        choice: Config | None = None
        choice_key: tuple[float, int] | None = None
        for config in ranked:
            if self._breaks_requirements(config, sd):
                continue
            predicted = self._model.predict(config)
            steps = len(self._space.departures(config))
            optimism = self.confidence_z * sd * math.sqrt(1 + steps)
            if best is not None and predicted + optimism < best:
                continue
            key = (predicted, -steps)
            if choice_key is None or key > choice_key:
                choice, choice_key = config, key
        if choice is None:
            return None, (
                f"stopped exploring: {len(open_)} untried configuration(s) predicted below the "
                "best measured one beyond the model's uncertainty"
            )
        return choice, None

    def _uncertainty(self) -> float:
        """Standard deviation of a log-objective prediction: noise, then model misfit."""
        noise = self.noise_floor
        rel = []
        for t in self._passing():
            ci = t.result.interval(self._metric)
            value = t.result.metrics.get(self._metric)
            if ci is not None and isinstance(value, int | float) and value > 0:
                rel.append((ci[1] - ci[0]) / (2 * Z95 * float(value)))
        if rel:
            noise = max(noise, sorted(rel)[len(rel) // 2])
        return math.sqrt(noise**2 + self._model.residual_sd**2)

    def _breaks_requirements(self, config: Config, sd: float) -> bool:
        for req, model in self._req_models.items():
            if len(model.observations) < 3:
                continue
            _, op, bound = _req_parts(req)
            predicted = math.exp(model.predict(config))
            margin = math.exp(self.confidence_z * max(sd, model.residual_sd) * 2)
            if op.startswith("<") and predicted > bound * margin:
                return True
            if op.startswith(">") and predicted < bound / margin:
                return True
        return False

    def _top(self, n: int, scale: float) -> list[Config]:
        if n <= 0:
            return []
        scored: dict[Any, tuple[float, Config]] = {}
        for t in self._passing():
            if t.scale != scale or requirement_failures(
                t.result.metrics, self.spec.objective.require
            ):
                continue
            s = self._log_score(t.result.metrics.get(self._metric))
            if s is None:
                continue
            key = flags_key(t.config)
            if key not in scored or s > scored[key][0]:
                scored[key] = (s, t.config)
        ranked = sorted(scored.values(), key=lambda sc: sc[0], reverse=True)
        return [c for _, c in ranked[:n]]


def _req_parts(req: str) -> tuple[str, str, float]:
    for op in _REQ_OPS:
        if op in req:
            name, bound = req.split(op, 1)
            return name.strip(), op, float(bound)
    raise ValueError(req)
