"""Output checks: known answers, garbage detectors, differential accuracy, under-load.

The stages ``correct`` and ``accurate`` of a trial, and the same detectors over the
benchmark's sampled outputs. Everything here reports data (reports with a category and
evidence); nothing raises for a misbehaving server.

Each name is loaded from its module on first use: importing one check (or
:class:`ReferenceAnswers` to carry a reference) does not load every check and the HTTP
client with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bringup.lazy import exports

if TYPE_CHECKING:
    from bringup.checks.accuracy import (
        AccuracyReport,
        bootstrap_ci,
        collect_answers,
        compare_accuracy,
    )
    from bringup.checks.correctness import (
        CheckReport,
        CheckResult,
        LoadLevel,
        check_under_load,
        run_correctness,
    )
    from bringup.checks.garbage import GarbageFinding, detect_first_token_stops, detect_garbage
    from bringup.checks.known_answers import KnownAnswer, accuracy_prompts_for, suite_for
    from bringup.checks.reference import ReferenceAnswers
    from bringup.checks.scoring import force_tokens

_HOME = {
    "AccuracyReport": "bringup.checks.accuracy",
    "ReferenceAnswers": "bringup.checks.reference",
    "bootstrap_ci": "bringup.checks.accuracy",
    "collect_answers": "bringup.checks.accuracy",
    "compare_accuracy": "bringup.checks.accuracy",
    "CheckReport": "bringup.checks.correctness",
    "CheckResult": "bringup.checks.correctness",
    "LoadLevel": "bringup.checks.correctness",
    "check_under_load": "bringup.checks.correctness",
    "run_correctness": "bringup.checks.correctness",
    "GarbageFinding": "bringup.checks.garbage",
    "detect_first_token_stops": "bringup.checks.garbage",
    "detect_garbage": "bringup.checks.garbage",
    "KnownAnswer": "bringup.checks.known_answers",
    "accuracy_prompts_for": "bringup.checks.known_answers",
    "suite_for": "bringup.checks.known_answers",
    "force_tokens": "bringup.checks.scoring",
}

__all__ = [
    "AccuracyReport",
    "CheckReport",
    "CheckResult",
    "GarbageFinding",
    "KnownAnswer",
    "LoadLevel",
    "ReferenceAnswers",
    "accuracy_prompts_for",
    "bootstrap_ci",
    "check_under_load",
    "collect_answers",
    "compare_accuracy",
    "detect_first_token_stops",
    "detect_garbage",
    "force_tokens",
    "run_correctness",
    "suite_for",
]


__getattr__ = exports(__name__, _HOME)
