"""What ``--json`` prints: the sweep's and the launch's outcome as plain JSON objects.

A script reads these instead of the terminal table. Every value that may hold a secret
goes through the redaction helpers: secret-named flags show ``***`` (``redact_flags``)
and the launch command has its secret words masked (``redact_argv``). The keys are part
of the interface; add keys, never rename them.
"""

from __future__ import annotations

import json
from typing import Any

from bringup.secrets import redact_argv, redact_flags
from bringup.sweep import SweepOutcome
from bringup.verdict import TrialResult

# the figures a script compares trials by; the store keeps the full metrics
SUMMARY_METRICS = ("decode_tok_s_single", "ttft_p50_ms", "output_tok_s")


def trial_json(r: TrialResult) -> dict[str, Any]:
    return {
        "trial_id": r.trial_id,
        "flags": redact_flags(r.flags),
        "status": r.status.value,
        # a failure's own stage: where it failed, as the table's details say
        "stage": (r.failure.stage if r.failure else r.stage).value,
        "category": r.failure.category.value if r.failure else None,
        "metrics": {k: r.metrics[k] for k in SUMMARY_METRICS if k in r.metrics},
    }


def sweep_json(outcome: SweepOutcome) -> dict[str, Any]:
    """The run, every trial in order, the winner and its launch command (redacted)."""
    winner: dict[str, Any] | None = None
    if outcome.winner is not None:
        win = next(r for r in outcome.results if r.trial_id == outcome.winner.trial_id)
        winner = {
            "trial_id": win.trial_id,
            "flags": redact_flags(win.flags),
            "reason": outcome.winner.reason,
            "command": redact_argv(win.command),
        }
    return {
        "run_id": outcome.run_id,
        "trials": [trial_json(r) for r in outcome.results],
        "winner": winner,
    }


def launch_json(trial: TrialResult, url: str, pid: int | None) -> dict[str, Any]:
    """The live server of ``bringup launch``: where it listens, which process, which trial."""
    return {
        "url": url,
        "pid": pid,
        "trial_id": trial.trial_id,
        "status": trial.status.value,
        "category": trial.failure.category.value if trial.failure else None,
        "command": redact_argv(trial.command),
    }


def dumps(obj: dict[str, Any]) -> str:
    """One line: a script may read it with a single ``readline``."""
    return json.dumps(obj, sort_keys=False, default=str)
