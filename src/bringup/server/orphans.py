"""Reconcile what a killed bringup left behind, at the start of the next run.

For each engine recorded in the store (:mod:`bringup.store.launched`) whose owning bringup
is gone: if the same process (pid *and* start time) still leads the same process group,
it is ours: its group gets SIGTERM, then SIGKILL after the grace period. Anything else
(pid gone, reused by another program, group changed) is only forgotten, never signalled.
Runs still marked running whose owner died are marked ``interrupted`` with their running
trials. An engine normally dies with bringup already (a parent-death signal, see
:mod:`bringup.server.process`); this covers systems without one and engines that
survived it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from bringup.store import Store
from bringup.store import launched as rec


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _stop_group(pgid: int, grace_s: float) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.05)
    if _group_alive(pgid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _provably_ours(row: rec.Launched) -> bool:
    if not rec.same_process(row.pid, row.started):
        return False
    try:
        return os.getpgid(row.pid) == row.pgid
    except ProcessLookupError:
        return False


def reconcile(store: Store, grace_s: float = 5.0) -> list[str]:
    """Stop orphaned engines, mark dead runs interrupted; one note per thing done."""
    notes: list[str] = []
    for row in rec.rows(store):
        if rec.same_process(row.owner_pid, row.owner_started):
            continue  # its bringup is alive (another sweep on this database)
        if _provably_ours(row):
            _stop_group(row.pgid, grace_s)
            notes.append(
                f"stopped engine pid {row.pid} of trial {row.trial_id}, left running by a "
                "bringup that died"
            )
        rec.delete(store, row)
    for run_id in rec.dead_runs(store):
        store.mark_interrupted(run_id)
        notes.append(f"run {run_id} was left running by a bringup that died; marked interrupted")
    return notes
