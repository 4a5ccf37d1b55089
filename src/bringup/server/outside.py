"""Was an engine stopped from outside bringup? A signal death bringup did not send.

bringup signals an engine only at teardown, so an engine that died of a signal before
then was stopped by someone else: SIGTERM, SIGINT, SIGHUP or SIGQUIT come from a person or
a supervisor, and SIGKILL does too unless the kernel's OOM killer acted meanwhile
(``oom_kill`` in /proc/vmstat counts every kill it makes, on the whole machine). Such a
trial says nothing about its configuration: it is ``interrupted``, its failure kept as
evidence but transient, so that it is retried once, never prunes and is never reused.
"""

from __future__ import annotations

import signal
from pathlib import Path

from bringup.verdict import Status, TrialResult

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGKILL)
VMSTAT = Path("/proc/vmstat")


def oom_kills(vmstat: Path = VMSTAT) -> int | None:
    """The kernel's count of OOM kills so far; None where it keeps none (not Linux)."""
    try:
        for line in vmstat.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def outside_signal(
    returncode: int | None, oom_before: int | None, oom_now: int | None
) -> str | None:
    """The name of the signal someone else stopped the engine with, or None."""
    if returncode is None or returncode >= 0:
        return None
    try:
        sig = signal.Signals(-returncode)
    except ValueError:
        return None
    if sig not in STOP_SIGNALS:
        return None  # SIGSEGV, SIGABRT...: the engine's own crash
    if sig is signal.SIGKILL and (oom_before is None or oom_now is None or oom_now > oom_before):
        return None  # the OOM killer may have done it (or nothing tells): the verdict stands
    return sig.name


def mark_interrupted(result: TrialResult, returncode: int | None, oom_before: int | None) -> bool:
    """Make a failed trial whose engine someone else stopped ``interrupted``; True if so."""
    if result.status is not Status.FAILED or result.failure is None:
        return False
    name = outside_signal(returncode, oom_before, oom_kills())
    if name is None:
        return False
    result.status = Status.INTERRUPTED
    result.failure.transient = True
    result.note = (
        f"the engine was stopped by {name} from outside bringup (not by bringup, not by the "
        f"kernel's OOM killer): interrupted, not a verdict; it was {result.failure.headline()}"
    )
    return True
