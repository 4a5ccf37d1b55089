"""Diagnosis: log text (plus exit status and stage) -> category, evidence, remedy.

One classifier, used inside every failed trial (``classify``), during readiness (``fatal_line``
ends the wait at the first fatal line; ``diagnose_hang`` explains a timeout) and by
``bringup diagnose``. ``extract_chosen`` reads what a healthy engine log says it selected.
"""

from bringup.diagnose.chosen import extract_chosen
from bringup.diagnose.classifier import classify
from bringup.diagnose.diagnosis import Diagnosis
from bringup.diagnose.fatal import fatal_line
from bringup.diagnose.hang import diagnose_hang, stage_reached

__all__ = [
    "Diagnosis",
    "classify",
    "diagnose_hang",
    "extract_chosen",
    "fatal_line",
    "stage_reached",
]
