"""Executors: where planned trials run (see :mod:`bringup.executors.base` for the seam)."""

from bringup.executors.base import (
    Executor,
    TrialDone,
    TrialJob,
    TrialSink,
    abort_if_port_busy,
)
from bringup.executors.local import LocalExecutor

__all__ = [
    "Executor",
    "LocalExecutor",
    "TrialDone",
    "TrialJob",
    "TrialSink",
    "abort_if_port_busy",
]
