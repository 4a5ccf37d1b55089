"""Output checks: known answers, garbage detectors, differential accuracy, under-load.

The stages ``correct`` and ``accurate`` of a trial, and the same detectors over the
benchmark's sampled outputs. Everything here reports data (reports with a category and
evidence); nothing raises for a misbehaving server.
"""

from bringup.checks.accuracy import (
    AccuracyReport,
    ReferenceAnswers,
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
from bringup.checks.scoring import force_tokens

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
