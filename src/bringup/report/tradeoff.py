"""Accuracy against speed: what each configuration that was compared with the reference
gained in the objective, and how far its answers drifted, against the launch-to-launch
noise of the reference itself.

A **control** is a trial whose flags differ from the reference only in ``[checks] controls``
(flags that cannot change greedy output, such as a sampling seed): a second launch of the
reference. Its drift is the floor every other drift is read against: an FP8 KV cache whose
logprob MAD is 4x the control's changes answers; one at 1x is noise. The section ends with
the threshold that would keep only configurations within the control's interval, so a user
who wants the reference's accuracy (seed 002's bf16 choice) can write it in the spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bringup.plan.space import changed_flags
from bringup.report.model import RunReport
from bringup.store import TrialRow


@dataclass
class LaunchNoise:
    """The objective over every launch of the reference configuration (itself + controls)."""

    values: list[float]

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    @property
    def spread(self) -> float:
        """Half the range relative to the mean: 0.05 is +-5% between launches."""
        return (max(self.values) - min(self.values)) / 2 / self.mean if self.mean else 0.0


@dataclass
class TradeoffRow:
    trial: TrialRow
    objective: float | None
    gain: float | None  # objective relative to the reference launches' mean: +0.12 is 12% better
    mad: float
    mad_ci: tuple[float, float] | None
    agreement: float | None
    over_control: float | None  # MAD / the controls' mean MAD
    control: bool
    verdict: str
    within_noise: bool = False  # the gain is inside the reference launches' own spread


def _controls_of(report: RunReport) -> list[str]:
    checks = (report.run.get("spec") or {}).get("checks") or {}
    return [str(f) for f in checks.get("controls") or []]


def _reference(report: RunReport) -> TrialRow | None:
    refs = [t for t in report.trials if t.purpose == "reference" and t.status.value == "passed"]
    return refs[0] if refs else None


def _objective(report: RunReport, trial: TrialRow) -> float | None:
    value = trial.metrics.get(report.objective)
    return float(value) if isinstance(value, int | float) else None


def _launches(report: RunReport, ref: TrialRow, controls: list[TrialRow]) -> LaunchNoise | None:
    known = [v for t in [ref, *controls] if (v := _objective(report, t)) is not None]
    return LaunchNoise(known) if known else None


def launch_noise(report: RunReport, rows: list[TradeoffRow]) -> LaunchNoise | None:
    """The objective over the reference and its controls (``rows`` from tradeoff_rows)."""
    ref = _reference(report)
    return _launches(report, ref, [r.trial for r in rows if r.control]) if ref else None


def tradeoff_rows(report: RunReport) -> list[TradeoffRow]:
    """One row per trial with an accuracy comparison, controls first, then by drift."""
    ref = _reference(report)
    if ref is None:
        return []
    controls = set(_controls_of(report))
    measured: list[tuple[TrialRow, dict[str, Any], bool]] = []
    for t in report.trials:
        acc = t.checks.get("accuracy")
        if t is ref or not isinstance(acc, dict) or not isinstance(acc.get("logprob_mad"), float):
            continue
        changed = changed_flags(t.flags, ref.flags)
        measured.append((t, acc, bool(changed) and changed <= controls))
    floor = [float(a["logprob_mad"]) for _, a, c in measured if c]
    floor_mad = sum(floor) / len(floor) if floor else None
    noise = _launches(report, ref, [t for t, _, c in measured if c])
    base = noise.mean if noise else None
    rows = []
    for t, acc, is_control in measured:
        value = _objective(report, t)
        gain = None
        if value is not None and base:
            gain = (value - base) / base if report.larger_is_better else (base - value) / base
        ci = acc.get("logprob_mad_ci")
        mad = float(acc["logprob_mad"])
        rows.append(
            TradeoffRow(
                t,
                value,
                gain,
                mad,
                (float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 else None,
                acc.get("token_agreement"),
                mad / floor_mad if floor_mad else None,
                is_control,
                t.status.value if t.category is None else t.category.value,
                within_noise=gain is not None
                and noise is not None
                and len(noise.values) > 1
                and abs(gain) <= noise.spread,
            )
        )
    rows.sort(key=lambda r: (not r.control, r.mad))
    return rows


def threshold_hint(rows: list[TradeoffRow]) -> str | None:
    """The spec line that keeps only drifts the controls' own interval allows."""
    uppers = [r.mad_ci[1] for r in rows if r.control and r.mad_ci]
    if not uppers:
        return None
    limit = max(uppers)
    if limit == 0.0:
        exact = [r for r in rows if not r.control and r.mad == 0.0]
        return (
            "the control reproduced the reference's answers exactly, so any drift is the"
            " configuration's own; [checks] max_logprob_mad = 0.001 keeps only"
            f" configurations that reproduce them ({len(exact)} of the compared here)"
        )
    beyond = [r for r in rows if not r.control and r.mad_ci and r.mad_ci[0] > limit]
    return (
        f"to accept only drift within the relaunch noise, set [checks] max_logprob_mad ="
        f" {limit:.3f} (the control's upper 95% bound); {len(beyond)} of the compared"
        " configurations drift beyond it"
    )
