"""Diagnosis: log text (plus exit status and stage) -> category, evidence, remedy.

One classifier, used inside every failed trial (``classify``), during readiness (``fatal_line``
ends the wait at the first fatal line; ``diagnose_hang`` explains a timeout) and by
``bringup diagnose``. ``extract_chosen`` reads what a healthy engine log says it selected.

Each name is loaded from its module on first use: an engine adapter that reads its logs
through :mod:`bringup.diagnose.chosen` does not load the classifier and every rule (and,
through them, the checks and the HTTP client) when it is only registered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bringup.lazy import exports

if TYPE_CHECKING:
    from bringup.diagnose.chosen import extract_chosen
    from bringup.diagnose.classifier import classify
    from bringup.diagnose.diagnosis import Diagnosis
    from bringup.diagnose.fatal import fatal_line
    from bringup.diagnose.hang import diagnose_hang, stage_reached

_HOME = {
    "Diagnosis": "bringup.diagnose.diagnosis",
    "classify": "bringup.diagnose.classifier",
    "diagnose_hang": "bringup.diagnose.hang",
    "extract_chosen": "bringup.diagnose.chosen",
    "fatal_line": "bringup.diagnose.fatal",
    "stage_reached": "bringup.diagnose.hang",
}

__all__ = [
    "Diagnosis",
    "classify",
    "diagnose_hang",
    "extract_chosen",
    "fatal_line",
    "stage_reached",
]


__getattr__ = exports(__name__, _HOME)
