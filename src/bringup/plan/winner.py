"""Choose the winning configuration, aware of measurement noise.

Only passed trials that meet every ``[objective].require`` constraint compete. Trials of
the same configuration are pooled, and so are launches that differ only in ``[checks]
controls`` (a seed under greedy decoding): they are repeats of one configuration. Where a
configuration has full-benchmark trials its short ones (``metrics["bench_scale"] < 1``)
are ignored. Each configuration gets an interval: a t-interval over its launches, else
the trial's own interval over the repeats inside its launch, else the point. The
machine's run-to-run noise is measured where any configuration ran more than once
(:func:`run_noise`: the relative variance pooled over the repeated configurations,
those that wander far beyond the rest left out): a
single measurement's standard error is then at least that noise, moderated by a prior
(:data:`NOISE_PRIOR`, for the first repeats that agree by luck) (a benchmark's own CI
says how steady one run was, not how far the next launch lands). The best configuration
is compared with each other by Welch's two-sample t-test (a repeat's standard error from
its spread, a single trial's from its CI or the measured noise). Only those whose gap to
the best is within the measured noise (smaller than one standard error of the
difference), whose measured gap is below ``EQUIVALENT`` of the best (a gap that would
matter for a deployment is no tie, however noisy), and that were measured no less
steadily than the best (a configuration whose speed wanders is no safer choice) tie
with it; among a tie the most conservative (fewest departures from the reference, most
mature values) wins. A larger gap keeps the best even when it is not significant at 95%
(the other then stays ``undecided``, for the planner to measure again).
The best is the one with the highest mean less one standard error, so a configuration
whose few measurements wander does not win on a lucky draw. A repeated configuration's
standard error is its own spread moderated by the measured noise (counted as
``PRIOR_DF`` more degrees of freedom) where its spread is below that noise; a spread
above it is the configuration's own (a backend whose speed wanders) and is kept, and so
is one significantly below it (the noise was measured on configurations that wander more). Those
not significantly worse than the best (and not within ``EQUIVALENT`` of it for certain)
are the winner's ``undecided``: what a planner measures again to decide. The reason
states the margin over the runner-up (or over the chosen one) with its 95% uncertainty.
Two single measurements with no CI and no measured noise cannot be compared; the reason
says so.

Contention: a benchmark taken while other processes took a larger share of the CPU than
the quietest competing measurement ran slower than it would have beside it (never
faster). Its interval is widened towards the better side by that excess ``e`` (a
throughput up to ``value / (1 - e)``, a latency down to ``value * (1 - e)``), so two
configurations measured under very different contention are compared with that
uncertainty (in the t-test, a contended competitor counts at its widened, optimistic
value), and the reason names the contention. Measurements under the same contention
are compared as they are.
"""

from __future__ import annotations

import math
import operator
import re
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bringup.contention import CONTENDED_SHARE, benchmark_contention
from bringup.plan.space import SearchSpace, flags_key, same_value
from bringup.spec import Spec
from bringup.student import Z95 as _Z95
from bringup.student import chi2_quantile, t95
from bringup.verdict import TrialResult

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
# A share taken beyond this says nothing a widened interval could still compare.
_MAX_TAKEN = 0.9
# A difference whose whole 95% interval lies within this share of the best's value cannot
# matter for a deployment: measuring it further decides nothing worth deciding.
EQUIVALENT = 0.01
# Degrees of freedom the machine's measured noise counts for in a repeated configuration's
# own standard error (a moderated variance).
PRIOR_DF = 2
# What the machine's run-to-run noise is taken to be before repeats say otherwise (a
# relative sd; a full benchmark rerun on a server typically lands within a few percent),
# counted as this many degrees of freedom in the measured estimate: one repeat whose two
# values agreed to 0.1% says little of how the next launch lands.
NOISE_PRIOR = 0.02
NOISE_PRIOR_DF = 2
# Normal quantiles of the chi-square bounds in :func:`run_noise`.
_Z_LOWER_DECILE = -1.2816
_Z99 = 2.326
_Z05 = -1.645


@dataclass
class Winner:
    trial_id: str
    config: dict[str, Any]
    value: float
    interval: tuple[float, float]
    reason: str
    contenders: list[str] = field(default_factory=list)  # trial ids within the noise
    # the winner's lead over the runner-up (or the best's over the chosen one): the
    # difference of means and its 95% half-width; None when nothing was compared
    margin: tuple[float, float] | None = None
    # configurations whose gap to the best-measured one is not yet decided (not significant,
    # not surely within EQUIVALENT), closest first, with their measurement counts
    undecided: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    leader: tuple[dict[str, Any], int] | None = None  # the best-measured one, its count
    noise: tuple[float, int] | None = None  # measured run-to-run noise: relative sd, df


@dataclass(frozen=True)
class _Estimate:
    mean: float
    se: float  # standard error of the mean; 0 when nothing measured the spread
    df: float  # degrees of freedom of ``se`` (inf for a CI taken as normal)


@dataclass(frozen=True)
class _Gap:
    diff: float  # best minus other, in the better direction (positive: best is better)
    half: float  # 95% half-width of diff; 0 when neither side has a spread
    t: float
    df: float

    @property
    def significant(self) -> bool:
        return self.diff > self.half

    @property
    def within_noise(self) -> bool:
        """The gap is smaller than one standard error of the difference."""
        return self.t < 1.0

    def tie(self, value: float) -> bool:
        """Within the noise, and the measured gap is below what matters (``EQUIVALENT`` of
        ``value``): only then may the more conservative configuration be chosen."""
        return self.within_noise and self.diff <= EQUIVALENT * abs(value)

    def equivalent(self, value: float) -> bool:
        """The whole 95% interval of the gap lies within ``EQUIVALENT`` of ``value``."""
        return self.half > 0 and abs(self.diff) + self.half <= EQUIVALENT * abs(value)


def welch(a: _Estimate, b: _Estimate, diff: float) -> _Gap:
    """Welch's t for a difference ``diff`` of two means with their standard errors."""
    var = a.se**2 + b.se**2
    if var <= 0:
        return _Gap(
            diff, 0.0, math.inf if diff > 0 else (0.0 if diff == 0 else -math.inf), math.inf
        )
    # Welch-Satterthwaite; a side with infinite df contributes no term
    denom = sum(e.se**4 / e.df for e in (a, b) if e.se > 0 and not math.isinf(e.df))
    df = var**2 / denom if denom > 0 else math.inf
    se = math.sqrt(var)
    return _Gap(diff, t95(df) * se, diff / se, df)


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
    noise: tuple[float, int] | None = None  # measured run-to-run noise (set by choose_winner)

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
            half = t95(n - 1) * self.estimate(metric).se
            return mean - half, mean + half
        ci = self.trials[0].interval(metric)
        return ci if ci is not None else (mean, mean)

    def estimate(self, metric: str) -> _Estimate:
        n = len(self.values)
        mean = self.mean
        if n >= 2:
            sd, df = statistics.stdev(self.values), float(n - 1)
            prior = self.noise[0] * abs(mean) if self.noise is not None else 0.0
            if sd < prior and sd**2 * df >= prior**2 * chi2_quantile(df, _Z05):
                # moderated: a spread below the machine's noise is steadied by it, counted
                # as PRIOR_DF more degrees of freedom (two or three repeats may look
                # steadier than the machine is); a spread above it is the configuration's
                # own (a backend whose speed wanders) and is not pulled down, and so is one
                # significantly below it (one-sided 95%: the noise was measured on
                # configurations that wander more than this one does)
                sd = math.sqrt(((n - 1) * sd**2 + PRIOR_DF * prior**2) / (n - 1 + PRIOR_DF))
                df += PRIOR_DF
            return _Estimate(mean, sd / math.sqrt(n), df)
        own = _Estimate(mean, 0.0, math.inf)
        ci = self.trials[0].interval(metric)
        if ci is not None:
            # a t-interval over the launch's own repeats when their count is stored
            repeats = self.trials[0].metrics.get(f"{metric}_ci_n")
            if isinstance(repeats, int) and repeats >= 2:
                half = abs(ci[1] - ci[0]) / 2
                own = _Estimate(mean, half / t95(repeats - 1), repeats - 1)
            else:
                own = _Estimate(mean, abs(ci[1] - ci[0]) / (2 * _Z95), math.inf)
        # one launch's own interval says how steady it ran, not where the next launch lands
        if self.noise is not None and self.noise[0] * abs(mean) > own.se:
            return _Estimate(mean, self.noise[0] * abs(mean), self.noise[1])
        return own

    def optimistic(self) -> float:
        """The mean as good as contention could have hidden (see the module docstring)."""
        if self.excess <= 0:
            return self.mean
        return self.mean / (1.0 - self.excess) if self.larger else self.mean * (1.0 - self.excess)

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)


def _pools(
    results: Iterable[TrialResult],
    metric: str,
    require: list[str],
    larger: bool = True,
    controls: Iterable[str] = (),
) -> dict[Any, _Pool]:
    """Passed trials pooled by configuration; ``controls`` (flags that cannot change the
    answers or the speed, ``[checks] controls``) do not tell configurations apart, so two
    launches that differ only in them are repeats of one configuration."""
    ignored = set(controls)
    pools: dict[Any, _Pool] = {}
    for r in results:
        value = r.metrics.get(metric)
        if not r.passed or not isinstance(value, int | float):
            continue
        if requirement_failures(r.metrics, require):
            continue
        scale = float(r.metrics.get("bench_scale", 1.0))
        key = flags_key({k: v for k, v in r.flags.items() if k not in ignored})
        pool = pools.get(key)
        if pool is None or scale > pool.scale:
            pools[key] = _Pool([r], [float(value)], scale, larger)
        elif scale == pool.scale:
            pool.trials.append(r)
            pool.values.append(float(value))
    return pools


def run_noise(samples: Iterable[list[float]]) -> tuple[float, int] | None:
    """The machine's run-to-run noise: the relative variance pooled over every sample set of
    two or more values (each weighted by its degrees of freedom) that is not clearly
    noisier than the machine, as a relative sd with the pooled degrees of freedom; None
    when nothing was measured twice.

    Some configurations wander far more than the machine does (a backend whose speed
    varies by 20% run to run): pooled in, they would make every steady configuration look
    as noisy, and the sets measured most are often theirs (a lucky draw leads, so it is
    measured again). A robust scale tells them apart: the lower decile of the sets'
    variances, each divided by its chi-square lower decile (so it estimates the machine's
    variance whatever the sets' degrees of freedom, and holds while most sets wander). A
    set whose variance is beyond that scale's 99% chi-square bound is left out and keeps
    its own spread (:meth:`_Pool.estimate`); every other set is pooled, the steadier and
    the less steady alike, so two or three repeats that happen to agree do not make the
    machine look steadier than it is."""
    sets: list[tuple[float, int]] = []
    for values in samples:
        if len(values) < 2:
            continue
        mean = statistics.fmean(values)
        if mean == 0:
            continue
        sets.append(((statistics.stdev(values) / abs(mean)) ** 2, len(values) - 1))
    if not sets:
        return None
    scaled = sorted(var * n / chi2_quantile(n, _Z_LOWER_DECILE) for var, n in sets)
    scale = statistics.quantiles(scaled, n=10, method="inclusive")[0] if len(scaled) > 1 else 0
    # sets that agreed exactly say nothing of the scale while others did not
    scale = scale or min((u for u in scaled if u > 0), default=0.0)
    kept = [(v, n) for v, n in sets if v * n <= scale * chi2_quantile(n, _Z99)] or sets
    ss, df = sum(v * n for v, n in kept), sum(n for _, n in kept)
    return math.sqrt(ss / df), df


def choose_winner(results: Iterable[TrialResult], spec: Spec) -> Winner | None:
    """The best passed configuration meeting the requirements, or None when none does."""
    metric, larger = objective_name(spec)
    pools = _pools(results, metric, spec.objective.require, larger, spec.checks.controls)
    if not pools:
        return None
    quietest = min(p.taken for p in pools.values())
    measured = run_noise(p.values for p in pools.values())
    noise = _with_prior(measured)
    for p in pools.values():
        p.excess = p.taken - quietest
        p.noise = noise
    sign = 1.0 if larger else -1.0
    # ranked by what each can be counted on for: its mean less one standard error, so a
    # configuration whose few measurements wander does not lead on one lucky draw
    ranked = sorted(
        pools.values(), key=lambda p: sign * p.mean - p.estimate(metric).se, reverse=True
    )
    best = ranked[0]
    gaps = {id(p): _gap(best, p, metric, sign) for p in ranked[1:]}
    # a configuration measured noisier than the best is no safer choice: it never ties
    tied = [
        p
        for p in ranked[1:]
        if gaps[id(p)].tie(best.mean) and _rel_se(p, metric) <= _rel_se(best, metric)
    ]
    undecided = sorted(
        (p for p in ranked[1:] if not gaps[id(p)].significant),
        key=lambda p: gaps[id(p)].t,
    )
    undecided = [p for p in undecided if not gaps[id(p)].equivalent(best.mean)]
    space = SearchSpace(spec)
    chosen = best
    if tied:
        group = [best, *tied]
        chosen = min(group, key=lambda p: (*space.risk(p.trials[0].flags), -sign * p.mean))
    # the launch named is one with the reference's control values where the pool has one
    reference = space.reference
    trial = max(
        chosen.trials,
        key=lambda t: (
            all(same_value(t.flags.get(c), reference.get(c)) for c in spec.checks.controls),
            sign * float(t.metrics[metric]),
        ),
    )
    value = chosen.mean
    unit = f"{metric} {value:.4g}"
    other = chosen if chosen is not best else (ranked[1] if len(ranked) > 1 else None)
    gap = gaps[id(other)] if other is not None else None
    lead = f" {_describe(gap, other, metric)}" if gap is not None and other else ""
    if chosen is best and not tied:
        reason = (f"highest {unit}" if larger else f"lowest {unit}") + lead
        if gap is not None and gap.half == 0:
            reason += " (single measurements; no interval to compare, nothing measured twice)"
        elif gap is not None and other is not None and not gap.significant:
            # the best estimate, but these measurements do not rank the two
            reason += (
                f"; not significant at 95%: {other.trials[0].trial_id} may be as fast, "
                "the measurements do not decide between them"
            )
    elif chosen is best:
        reason = (
            f"best {unit}{lead}; within measured noise of {len(tied)} other(s) but it is also "
            "the most conservative of them"
        )
    else:
        reason = (
            f"{metric} {best.mean:.4g} of {best.trials[0].trial_id} is within noise of "
            f"{value:.4g} here{lead}; chose the more conservative configuration"
        )
    if noise is not None and measured is not None:
        reason += (
            f"; run-to-run noise {noise[0]:.1%} (sd; {measured[0]:.1%} measured on repeats, "
            f"df {measured[1]}, with a prior of {NOISE_PRIOR:.0%})"
        )
    contended = _contention_note([best, *tied, *ranked[1:2]])
    if contended:
        reason += f"; {contended}"
    contenders = [p.trials[0].trial_id for p in [best, *tied] if p is not chosen]
    return Winner(
        trial_id=trial.trial_id,
        config=dict(trial.flags),
        value=value,
        interval=chosen.interval(metric),
        reason=reason,
        contenders=contenders,
        margin=(gap.diff, gap.half) if gap is not None else None,
        undecided=[(dict(p.trials[0].flags), len(p.values)) for p in undecided],
        leader=(dict(best.trials[0].flags), len(best.values)),
        noise=noise,
    )


def _with_prior(measured: tuple[float, int] | None) -> tuple[float, int] | None:
    """The measured noise moderated by :data:`NOISE_PRIOR` (None while nothing was measured
    twice: there is no measurement to moderate yet)."""
    if measured is None:
        return None
    sd, df = measured
    var = (df * sd**2 + NOISE_PRIOR_DF * NOISE_PRIOR**2) / (df + NOISE_PRIOR_DF)
    return math.sqrt(var), df + NOISE_PRIOR_DF


def _rel_se(pool: _Pool, metric: str) -> float:
    """A pool's standard error relative to its mean (how steadily it was measured)."""
    return pool.estimate(metric).se / abs(pool.mean) if pool.mean else math.inf


def _gap(best: _Pool, other: _Pool, metric: str, sign: float) -> _Gap:
    """How much better ``best`` measured than ``other`` at its optimistic value, by Welch."""
    diff = sign * (best.mean - other.optimistic())
    return welch(best.estimate(metric), other.estimate(metric), diff)


def _describe(gap: _Gap, other: _Pool, metric: str) -> str:
    tid = other.trials[0].trial_id
    if gap.half == 0:
        return f"(margin {gap.diff:+.4g} over {tid})"
    df = "inf" if math.isinf(gap.df) else f"{gap.df:.1f}"
    return f"(margin {gap.diff:+.4g} ± {gap.half:.4g} over {tid}, Welch t {gap.t:.2f}, df {df})"


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
