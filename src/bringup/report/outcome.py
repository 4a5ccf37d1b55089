"""A sweep's outcome in sentences that agree with its table and its exit status.

- ``reference_failure``: when the accuracy check is on and the reference configuration
  never passed, that is said first; its candidates are ``unchecked``, not ``passed``.
- ``verdict_counts``: the table's statuses counted, transient first looks named as such.
- ``no_winner_reason``: why no configuration won (the reference failed; passed ones broke
  an ``[objective].require``; nothing passed). A winner exists exactly when the sweep
  exits 0, so these lines are printed exactly when it exits 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bringup.plan.winner import requirement_failures
from bringup.spec import Spec
from bringup.verdict import Status, TrialResult


def _is_reference(flags: Mapping[str, Any], ref: Mapping[str, Any]) -> bool:
    return all(str(flags.get(k)) == str(v) for k, v in ref.items())


def reference_sentence(
    trials: Sequence[tuple[Mapping[str, Any], bool, str]], reference: Mapping[str, Any]
) -> str | None:
    """The sentence for ``(flags, passed, why it failed)`` rows, or None if the reference
    passed or never ran. Shared by the sweep's outcome and the stored run's text report."""
    refs = [t for t in trials if _is_reference(t[0], reference)]
    if not refs or any(passed for _, passed, _ in refs):
        return None
    return f"the reference configuration failed: {refs[-1][2]}; accuracy cannot be judged"


def reference_failure(results: Sequence[TrialResult], spec: Spec) -> str | None:
    """``the reference configuration failed: ...; accuracy cannot be judged`` or None."""
    if not spec.checks.accuracy:
        return None
    rows = [
        (r.flags, r.passed, r.failure.headline() if r.failure else r.status.value) for r in results
    ]
    return reference_sentence(rows, spec.reference_config())


def verdict_counts(results: Sequence[TrialResult]) -> str:
    counts = Counter(r.status.value for r in results)
    transient = sum(1 for r in results if r.failure is not None and r.failure.transient)
    parts = [f"{k} {v}" for k, v in sorted(counts.items())]
    if transient:
        parts.append(f"of the failed, {transient} transient (retried once, pruned nothing)")
    return ", ".join(parts)


def no_winner_reason(results: Sequence[TrialResult], spec: Spec) -> str:
    """Why no configuration won, in one sentence."""
    ref = reference_failure(results, spec)
    unchecked = [r for r in results if r.status is Status.UNCHECKED]
    if ref is not None and unchecked:
        return (
            f"no winner: {len(unchecked)} configuration(s) passed every other check but "
            "none was checked for accuracy, because the reference failed"
        )
    passed = [r for r in results if r.passed]
    if passed:
        broken = {
            r.trial_id: requirement_failures(r.metrics, spec.objective.require) for r in passed
        }
        example = next((f"{t}: {', '.join(b)}" for t, b in broken.items() if b), None)
        if example is None:
            return (
                f"no winner: {len(passed)} configuration(s) passed every check but none has "
                "a measured objective figure"
            )
        return (
            f"no winner: {len(passed)} configuration(s) passed every check but none meets "
            f"[objective].require ({example})"
        )
    return "no winner: no configuration passed every check"
