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
from collections.abc import Sequence

from bringup.plan.winner import requirement_failures
from bringup.spec import Spec
from bringup.verdict import Status, TrialResult


def _is_reference(result: TrialResult, spec: Spec) -> bool:
    ref = spec.reference_config()
    return all(str(result.flags.get(k)) == str(v) for k, v in ref.items())


def reference_failure(results: Sequence[TrialResult], spec: Spec) -> str | None:
    """``the reference configuration failed: ...; accuracy cannot be judged`` or None."""
    if not spec.checks.accuracy:
        return None
    refs = [r for r in results if _is_reference(r, spec)]
    if not refs or any(r.passed for r in refs):
        return None
    last = refs[-1]
    why = last.failure.headline() if last.failure else last.status.value
    return f"the reference configuration failed: {why}; accuracy cannot be judged"


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
