"""Re-verify a stored winner after an engine, driver or model change.

``await recheck(store, run_id, runs_dir)`` loads a finished run, re-resolves its spec on
this machine as it is now (so the fingerprint sees a replaced engine binary through its
content hash even when the version string did not change, and Python engines' package
versions), re-runs the reference and then the winner through the same gauntlet (checks
and benchmark), and compares:

- the fingerprint, key by key (what changed);
- the winner's verdict (it passed before: any failure now is a regression);
- its figures, each against the stored value with a noise band: the stored interval
  across repeats where there is one, else ``DEFAULT_NOISE`` (the demo spec records 10-20%
  run to run for single CPU measurements; the top of that range). A change beyond the
  band in the bad direction is a regression; within it, noise. A benchmark re-run while
  other processes took a larger share of the CPU than they did in the stored one ran slower
  for that alone (never faster): the excess share ``e`` is allowed on top of the band in the
  bad direction (a throughput up to ``1 - e`` lower, a latency up to ``1 / (1 - e)`` higher
  is not a regression of the configuration), as the winner widens a contended measurement,
  and the figure's line names it.

The reference's own change is reported beside the winner's: when both moved alike, the
environment changed, not the configuration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.contention import Contention, benchmark_contention
from bringup.errors import BringupError
from bringup.plan.base import PlannedTrial
from bringup.spec import Spec
from bringup.store import Store
from bringup.sweep import prepare
from bringup.trial import TrialContext, run_trial
from bringup.verdict import TrialResult, stored_interval

DEFAULT_NOISE = 0.20  # not measured here: the run-to-run spread the demo spec records
# figure -> True when higher is better
FIGURES = {
    "output_tok_s": True,
    "decode_tok_s_single": True,
    "ttft_p50_ms": False,
    "tpot_p50_ms": False,
    "e2e_p50_ms": False,
    # speculative decoding (checks.speculative): a collapse leaves the text right
    "spec_acceptance_rate": True,
    "spec_accept_len": True,
}


# latency figures that move by up to one engine step for the arrival's phase alone (a request
# that arrives just after a decode step began waits for it): figure -> the stored step time
# allowed on top of the band, so a TTFT of a few milliseconds is not judged by its percent
STEP_SLACK = {"ttft_p50_ms": "tpot_p50_ms"}


@dataclass
class FigureChange:
    name: str
    before: float
    after: float | None
    noise: float  # relative band
    regressed: bool
    contention: float = 0.0  # CPU share others took beyond the stored benchmark's

    @property
    def relative(self) -> float | None:
        if self.after is None or not self.before:
            return None
        return self.after / self.before - 1.0

    def line(self) -> str:
        rel = self.relative
        shown = "missing" if rel is None else f"{rel:+.1%}"
        after = "-" if self.after is None else f"{self.after:.4g}"
        verdict = "REGRESSION" if self.regressed else ("noise" if rel is not None else "")
        busier = f"; {self.contention:.0%} more CPU taken by others" if self.contention else ""
        return (
            f"{self.name}: {self.before:.4g} -> {after} ({shown}; noise ±{self.noise:.0%}"
            f"{busier}) {verdict}"
        ).rstrip()


@dataclass
class RecheckReport:
    run_id: str
    fingerprint_changes: list[str]
    winner_before: dict[str, Any]
    winner_now: TrialResult
    reference_now: TrialResult | None
    figures: list[FigureChange] = field(default_factory=list)
    reference_figures: list[FigureChange] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return bool(self.problems) or any(f.regressed for f in self.figures)


def fingerprint_changes(
    before: dict[str, Any], after: dict[str, Any], prefix: str = ""
) -> list[str]:
    """``key: old -> new`` for every key that differs (nested dicts flattened)."""
    out: list[str] = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(fingerprint_changes(a, b, f"{name}."))
        elif a != b:
            out.append(f"{name}: {json.dumps(a)} -> {json.dumps(b)}")
    return out


def noise_band(metrics: dict[str, Any], name: str) -> float:
    """The stored interval's relative half-width for ``name``, at least ``DEFAULT_NOISE``."""
    ci, value = stored_interval(metrics, name), metrics.get(name)
    if ci is not None and isinstance(value, int | float) and value:
        return max(DEFAULT_NOISE, (ci[1] - ci[0]) / 2 / float(value))
    return DEFAULT_NOISE


def excess_contention(before: dict[str, Contention], after: dict[str, Contention]) -> float:
    """The CPU share others took during the new benchmark beyond the stored one's (0 when
    the new one ran as quietly, or either was not measured)."""
    b, a = benchmark_contention(before), benchmark_contention(after)
    if a is None or b is None:
        return 0.0
    return max(0.0, min(a.taken_share - b.taken_share, 0.99))


def compare_figures(
    before: dict[str, Any], after: dict[str, Any], contention: float = 0.0
) -> list[FigureChange]:
    """Each figure against its stored value; ``contention`` is :func:`excess_contention`."""
    out: list[FigureChange] = []
    for name, higher_better in FIGURES.items():
        old = before.get(name)
        if not isinstance(old, int | float) or not old:
            continue
        new = after.get(name)
        new_v = float(new) if isinstance(new, int | float) else None
        band = noise_band(before, name)
        step = before.get(STEP_SLACK.get(name, ""))
        slack = float(step) if isinstance(step, int | float) and step > 0 else 0.0
        bad = False
        if new_v is not None:
            # what the new figure could have been on a machine as quiet as the stored one's
            best = new_v / (1.0 - contention) if higher_better else new_v * (1.0 - contention)
            rel = best / float(old) - 1.0
            bad = rel < -band if higher_better else best - slack > float(old) * (1.0 + band)
        out.append(FigureChange(name, float(old), new_v, band, bad, contention))
    return out


def _trial_rows(store: Store, run_id: str) -> tuple[Any, Any]:
    rows = store.trials(run_id)
    run = store.run(run_id)
    assert run is not None
    winner = next((r for r in rows if r.id == run.get("winner_trial")), None)
    reference = next((r for r in rows if r.purpose == "reference" and r.metrics), None)
    return winner, reference


async def recheck(store: Store, run_id: str | None, runs_dir: str | Path) -> RecheckReport:
    """Re-run a stored run's reference and winner now; see the module doc."""
    run = store.run(run_id)
    if run is None:
        where = f"run {run_id!r}" if run_id else "any run"
        raise BringupError(f"the store holds no {where}; pass a run id from `bringup report`.")
    winner, reference = _trial_rows(store, run["id"])
    if winner is None:
        raise BringupError(
            f"run {run['id']} has no winner to recheck; run a sweep that ends with one first."
        )
    spec = Spec.model_validate(run["spec"])
    prep = prepare(spec)
    changes = fingerprint_changes(run["fingerprint"], prep.fingerprint)
    out_dir = Path(runs_dir) / f"{run['id']}-recheck"
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = TrialContext(spec, prep.adapter, out_dir, collect_reference=True)
    ref_run = await run_trial(ctx, PlannedTrial(spec.reference_config(), "reference"), "ref")
    ctx = TrialContext(spec, prep.adapter, out_dir, reference=ref_run.answers)
    win_run = await run_trial(ctx, PlannedTrial(dict(winner.flags), "explore"), "winner")
    report = RecheckReport(run["id"], changes, winner.metrics, win_run.result, ref_run.result)
    now = win_run.result
    if now.failure is not None:
        report.problems.append(f"the winner now fails: {now.failure.headline()}")
    else:
        busier = excess_contention(winner.contention, now.contention)
        report.figures = compare_figures(winner.metrics, now.metrics, busier)
    if reference is not None and ref_run.result.failure is None:
        busier = excess_contention(reference.contention, ref_run.result.contention)
        report.reference_figures = compare_figures(
            reference.metrics, ref_run.result.metrics, busier
        )
    return report
