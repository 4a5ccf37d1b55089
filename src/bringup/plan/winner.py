"""Choose the winning configuration, aware of measurement noise.

Only passed trials that meet every ``[objective].require`` constraint compete. Trials of
the same configuration are pooled; where a configuration has full-benchmark trials its
short ones (``metrics["bench_scale"] < 1``) are ignored. Each configuration gets an
interval: a t-interval over its repeats, else the trial's own ``<metric>_ci``, else the
point. When the best configuration's interval overlaps others', the most conservative of
them (fewest departures from the reference, most mature values) wins and the reason says so.

Contention: a benchmark taken while other processes took a larger share of the CPU than
the quietest competing measurement ran slower than it would have beside it (never
faster). Its interval is widened towards the better side by that excess ``e`` (a
throughput up to ``value / (1 - e)``, a latency down to ``value * (1 - e)``), so two
configurations measured under very different contention are compared with that
uncertainty, and the reason names the contention. Measurements under the same contention
are compared as they are.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bringup.contention import CONTENDED_SHARE, benchmark_contention
from bringup.plan.space import SearchSpace, config_key
from bringup.spec import Spec
from bringup.verdict import TrialResult

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
# Two-sided 95% Student t quantiles by degrees of freedom (then the normal's 1.96).
_T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
# A share taken beyond this says nothing a widened interval could still compare.
_MAX_TAKEN = 0.9


@dataclass
class Winner:
    trial_id: str
    config: dict[str, Any]
    value: float
    interval: tuple[float, float]
    reason: str
    contenders: list[str] = field(default_factory=list)  # trial ids within the noise


def requirement_failures(metrics: Mapping[str, Any], require: Iterable[str]) -> list[str]:
    """The constraints (``"ttft_p99_ms < 2000"``) the metrics break or cannot show."""
    broken = []
    for item in require:
        m = re.fullmatch(r"\s*([a-z0-9_]+)\s*(<=|>=|<|>)\s*([-+0-9.eE]+)\s*", item)
        if not m:
            broken.append(item)
            continue
        name, op, bound = m.group(1), m.group(2), float(m.group(3))
        value = metrics.get(name)
        if not isinstance(value, int | float) or not _OPS[op](float(value), bound):
            broken.append(item)
    return broken


def objective_name(spec: Spec) -> tuple[str, bool]:
    """The metric to optimise and whether larger is better."""
    if spec.objective.minimize:
        return spec.objective.minimize, False
    return spec.objective.maximize, True


@dataclass
class _Pool:
    trials: list[TrialResult]
    values: list[float]
    scale: float
    larger: bool = True
    excess: float = 0.0  # contention beyond the quietest competitor's (set by choose_winner)

    @property
    def taken(self) -> float:
        """The largest share of the CPU others took while one of the pool's trials ran."""
        shares = [c.taken_share for t in self.trials if (c := benchmark_contention(t.contention))]
        return min(_MAX_TAKEN, max(shares, default=0.0))

    def interval(self, metric: str) -> tuple[float, float]:
        lo, hi = self._measured_interval(metric)
        if self.excess <= 0:
            return lo, hi
        if self.larger:
            return lo, hi / (1.0 - self.excess)
        return lo * (1.0 - self.excess), hi

    def _measured_interval(self, metric: str) -> tuple[float, float]:
        n = len(self.values)
        mean = sum(self.values) / n
        if n >= 2:
            sd = math.sqrt(sum((v - mean) ** 2 for v in self.values) / (n - 1))
            half = _T95.get(n - 1, 1.96) * sd / math.sqrt(n)
            return mean - half, mean + half
        ci = self.trials[0].metrics.get(f"{metric}_ci")
        if isinstance(ci, list | tuple) and len(ci) == 2:
            return float(ci[0]), float(ci[1])
        return mean, mean

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)


def _pools(
    results: Iterable[TrialResult], metric: str, require: list[str], larger: bool = True
) -> dict[Any, _Pool]:
    pools: dict[Any, _Pool] = {}
    for r in results:
        value = r.metrics.get(metric)
        if not r.passed or not isinstance(value, int | float):
            continue
        if requirement_failures(r.metrics, require):
            continue
        scale = float(r.metrics.get("bench_scale", 1.0))
        key = config_key(r.flags)
        pool = pools.get(key)
        if pool is None or scale > pool.scale:
            pools[key] = _Pool([r], [float(value)], scale, larger)
        elif scale == pool.scale:
            pool.trials.append(r)
            pool.values.append(float(value))
    return pools


def choose_winner(results: Iterable[TrialResult], spec: Spec) -> Winner | None:
    """The best passed configuration meeting the requirements, or None when none does."""
    metric, larger = objective_name(spec)
    pools = _pools(results, metric, spec.objective.require, larger)
    if not pools:
        return None
    quietest = min(p.taken for p in pools.values())
    for p in pools.values():
        p.excess = p.taken - quietest
    sign = 1.0 if larger else -1.0
    ranked = sorted(pools.values(), key=lambda p: sign * p.mean, reverse=True)
    best = ranked[0]
    lo, hi = best.interval(metric)
    overlapping = [p for p in ranked[1:] if _overlap(p.interval(metric), (lo, hi))]
    space = SearchSpace(spec)
    chosen = best
    if overlapping:
        group = [best, *overlapping]
        chosen = min(group, key=lambda p: (*space.risk(p.trials[0].flags), -sign * p.mean))
    trial = max(chosen.trials, key=lambda t: sign * float(t.metrics[metric]))
    value = chosen.mean
    unit = f"{metric} {value:.4g}"
    if chosen is best and not overlapping:
        reason = f"highest {unit}" if larger else f"lowest {unit}"
        if best._measured_interval(metric) == (best.mean, best.mean) and len(ranked) > 1:
            reason += " (single measurement; no interval to compare)"
    elif chosen is best:
        reason = (
            f"best {unit}; its interval overlaps {len(overlapping)} other(s) but it is also "
            "the most conservative of them"
        )
    else:
        reason = (
            f"{metric} {best.mean:.4g} of {best.trials[0].trial_id} is within noise of "
            f"{value:.4g} here (intervals overlap); chose the more conservative configuration"
        )
    contended = _contention_note([best, *overlapping, *ranked[1:2]])
    if contended:
        reason += f"; {contended}"
    contenders = [p.trials[0].trial_id for p in [best, *overlapping] if p is not chosen]
    return Winner(
        trial_id=trial.trial_id,
        config=dict(trial.flags),
        value=value,
        interval=chosen.interval(metric),
        reason=reason,
        contenders=contenders,
    )


def _contention_note(pools: list[_Pool]) -> str:
    """Say so when the compared measurements ran under very different contention."""
    seen = {id(p): p for p in pools}.values()
    taken = sorted(((p.taken, p.trials[0].trial_id) for p in seen), reverse=True)
    if len(taken) < 2 or taken[0][0] - taken[-1][0] < CONTENDED_SHARE:
        return ""
    parts = ", ".join(f"{tid} {share:.0%}" for share, tid in taken)
    return (
        f"measured under different CPU contention (share others took: {parts}); "
        "intervals widened by it, re-measure on a quieter machine to separate them"
    )


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]
