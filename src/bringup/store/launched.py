"""The record of engines bringup launched and of which bringup owns a run.

A process is named by its pid *and* its start time (``psutil`` ``create_time``): a pid
alone may since belong to somebody else. ``record`` is written as soon as an engine is
spawned and ``forget`` once it was stopped, so a row left behind means its bringup died
first. :mod:`bringup.server.orphans` reads these rows to stop what is provably ours.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import psutil

from bringup.store.db import Store


@dataclass(frozen=True)
class Launched:
    pid: int
    started: float
    pgid: int
    run_id: str
    trial_id: str
    owner_pid: int
    owner_started: float


def start_time(pid: int) -> float | None:
    """The process's start time, None when there is no such process."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def same_process(pid: int, started: float) -> bool:
    """Whether ``pid`` is still the process that started at ``started`` (not a reused pid)."""
    now = start_time(pid)
    return now is not None and abs(now - started) < 0.05


def _me() -> tuple[int, float]:
    pid = os.getpid()
    return pid, start_time(pid) or 0.0


def claim_run(store: Store, run_id: str) -> None:
    """Mark this bringup process as the owner of ``run_id``."""
    pid, started = _me()
    store.db.execute(
        "UPDATE runs SET owner_pid=?, owner_started=? WHERE id=?", (pid, started, run_id)
    )


def record(store: Store, pid: int, pgid: int, run_id: str, trial_id: str) -> None:
    started = start_time(pid)
    if started is None:  # gone already: nothing to reconcile later
        return
    owner, owner_started = _me()
    store.db.execute(
        "INSERT OR REPLACE INTO launched VALUES (?,?,?,?,?,?,?)",
        (pid, started, pgid, run_id, trial_id, owner, owner_started),
    )


def forget(store: Store, pid: int) -> None:
    owner, _ = _me()
    store.db.execute("DELETE FROM launched WHERE pid=? AND owner_pid=?", (pid, owner))


class _Spawned(Protocol):
    pid: int
    pgid: int


def tracker(store: Store, run_id: str, trial_id: str) -> Callable[[_Spawned, bool], None]:
    """A trial's process hook: record its engine when spawned, forget it once stopped."""

    def hook(proc: _Spawned, alive: bool) -> None:
        if alive:
            record(store, proc.pid, proc.pgid, run_id, trial_id)
        else:
            forget(store, proc.pid)

    return hook


def rows(store: Store) -> list[Launched]:
    return [
        Launched(
            int(r["pid"]),
            float(r["started"]),
            int(r["pgid"]),
            str(r["run_id"]),
            str(r["trial_id"]),
            int(r["owner_pid"]),
            float(r["owner_started"]),
        )
        for r in store.db.execute("SELECT * FROM launched")
    ]


def delete(store: Store, row: Launched) -> None:
    store.db.execute("DELETE FROM launched WHERE pid=? AND started=?", (row.pid, row.started))


def dead_runs(store: Store) -> list[str]:
    """Runs still marked running whose owning bringup process is gone."""
    out = []
    for r in store.db.execute(
        "SELECT id, owner_pid, owner_started FROM runs WHERE status='running'"
        " AND owner_pid IS NOT NULL"
    ):
        if not same_process(int(r["owner_pid"]), float(r["owner_started"] or 0.0)):
            out.append(str(r["id"]))
    return out
