"""Schema history as numbered migrations; each runs once, in order, recorded in _migrations.

:func:`migrate` is one ``BEGIN IMMEDIATE`` transaction: two bringup processes opening a
new database at once cannot both create it, and a failed migration leaves nothing
behind. It refuses, untouched, a database that is not bringup's (tables but no
``_migrations``) and one migrated by a newer bringup (a migration this one does not know):
:func:`check_schema` reads both before anything is written, not even the journal mode.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from bringup.errors import StoreError

Migration = Callable[[sqlite3.Connection], None]

M001 = """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            spec_path TEXT,
            spec_digest TEXT NOT NULL,
            spec_json TEXT NOT NULL,
            engine TEXT NOT NULL,
            fingerprint_json TEXT NOT NULL,
            fingerprint_key TEXT NOT NULL,
            status TEXT NOT NULL,
            run_dir TEXT,
            winner_trial TEXT,
            notes_json TEXT NOT NULL DEFAULT '[]'
        );
        CREATE TABLE trials (
            id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(id),
            seq INTEGER NOT NULL,
            config_key TEXT NOT NULL,
            fingerprint_key TEXT NOT NULL,
            engine TEXT NOT NULL,
            engine_version TEXT,
            purpose TEXT,
            flags_json TEXT NOT NULL,
            status TEXT NOT NULL,
            stage TEXT NOT NULL,
            category TEXT,
            evidence_json TEXT NOT NULL DEFAULT '[]',
            remedy TEXT,
            detail TEXT,
            timings_json TEXT NOT NULL DEFAULT '{}',
            metrics_json TEXT NOT NULL DEFAULT '{}',
            checks_json TEXT NOT NULL DEFAULT '{}',
            chosen_json TEXT NOT NULL DEFAULT '{}',
            command_json TEXT NOT NULL DEFAULT '[]',
            port INTEGER,
            pid INTEGER,
            log_path TEXT,
            note TEXT,
            reused_from TEXT,
            started REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE INDEX trials_decided ON trials(config_key, fingerprint_key, status);
        CREATE INDEX trials_run ON trials(run_id, seq);
        CREATE TABLE pruned (
            run_id TEXT NOT NULL REFERENCES runs(id),
            flags_json TEXT NOT NULL,
            by_trial TEXT,
            reason TEXT NOT NULL
        );
        CREATE TABLE reference_answers (
            fingerprint_key TEXT NOT NULL,
            config_key TEXT NOT NULL,
            answers_json TEXT NOT NULL,
            created REAL NOT NULL,
            PRIMARY KEY (fingerprint_key, config_key)
        );
"""

# engines bringup launched, so that the next run can stop what a killed bringup left
# behind; a run's owner (pid and start time) tells a live run from a dead one
M003 = """
CREATE TABLE launched (
    pid INTEGER NOT NULL,
    started REAL NOT NULL,
    pgid INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    trial_id TEXT NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_started REAL NOT NULL,
    PRIMARY KEY (pid, started)
);
ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE runs ADD COLUMN owner_started REAL;
"""


def _statements(script: str) -> list[str]:
    # executescript() would COMMIT the surrounding transaction: run statements one by one
    return [s.strip() for s in script.split(";") if s.strip()]


def m001_initial(db: sqlite3.Connection) -> None:
    for statement in _statements(M001):
        db.execute(statement)


def m002_launch_address(db: sqlite3.Connection) -> None:
    """Where the trial's server listened and answered health, as launched (deploy reads it)."""
    db.execute("ALTER TABLE trials ADD COLUMN host TEXT")
    db.execute("ALTER TABLE trials ADD COLUMN health_path TEXT")


def m003_launched(db: sqlite3.Connection) -> None:
    for statement in _statements(M003):
        db.execute(statement)


def m004_trial_contention(db: sqlite3.Connection) -> None:
    """The CPU left to each trial while it ran (see bringup.contention)."""
    db.execute("ALTER TABLE trials ADD COLUMN contention_json TEXT NOT NULL DEFAULT '{}'")


def m005_failure_transient(db: sqlite3.Connection) -> None:
    """Whether a failure was an accident of the moment (retried, never reused or pruning)."""
    db.execute("ALTER TABLE trials ADD COLUMN transient INTEGER NOT NULL DEFAULT 0")


def m006_failure_rule(db: sqlite3.Connection) -> None:
    """How a failure was decided: the deciding rule's id, the classifier's confidence and the
    flags the rule implicates (read by the pruner and ``bringup matrix --rules``)."""
    db.execute("ALTER TABLE trials ADD COLUMN rule TEXT")
    db.execute("ALTER TABLE trials ADD COLUMN confidence REAL")
    db.execute("ALTER TABLE trials ADD COLUMN implicated_json TEXT NOT NULL DEFAULT '[]'")


def m007_trial_node(db: sqlite3.Connection) -> None:
    """Where a trial ran when an executor placed it on another node: that node's name and
    fingerprint (a sweep over H100 and H200 nodes records each trial's own hardware)."""
    db.execute("ALTER TABLE trials ADD COLUMN node TEXT")
    db.execute("ALTER TABLE trials ADD COLUMN node_fingerprint_json TEXT")


MIGRATIONS: list[Migration] = [
    m001_initial,
    m002_launch_address,
    m003_launched,
    m004_trial_contention,
    m005_failure_transient,
    m006_failure_rule,
    m007_trial_node,
]
KNOWN = {m.__name__ for m in MIGRATIONS}


def check_schema(db: sqlite3.Connection, path: str) -> set[str]:
    """The migrations applied so far; StoreError for a foreign or newer database."""
    tables = {
        r[0]
        for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        if not str(r[0]).startswith("sqlite_")
    }
    if not tables:
        return set()
    if "_migrations" not in tables:
        shown = ", ".join(sorted(tables)[:5])
        raise StoreError(
            f"{path} is not a bringup results database (it holds tables {shown}); it was "
            "left untouched: pass --db with another path."
        )
    done = {str(r[0]) for r in db.execute("SELECT name FROM _migrations")}
    newer = sorted(done - KNOWN)
    if newer:
        raise StoreError(
            f"{path} was written by a newer bringup (schema {newer[-1]}); it was left "
            "untouched: upgrade bringup or pass --db with another path."
        )
    return done


def migrate(db: sqlite3.Connection, path: str = "the results database") -> None:
    """Bring the schema up to date in one transaction (``db`` is in autocommit mode)."""
    if check_schema(db, path) >= KNOWN:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        done = check_schema(db, path)  # again, under the lock: another process may have won
        db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied REAL)")
        for migration in MIGRATIONS:
            if migration.__name__ not in done:
                migration(db)
                db.execute(
                    "INSERT INTO _migrations VALUES (?, strftime('%s','now'))",
                    (migration.__name__,),
                )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
