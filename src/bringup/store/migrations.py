"""Schema history as numbered migrations; each runs once, in order, recorded in _migrations."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def m001_initial(db: sqlite3.Connection) -> None:
    db.executescript(
        """
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
    )


def m002_launch_address(db: sqlite3.Connection) -> None:
    """Where the trial's server listened and answered health, as launched (deploy reads it)."""
    db.execute("ALTER TABLE trials ADD COLUMN host TEXT")
    db.execute("ALTER TABLE trials ADD COLUMN health_path TEXT")


MIGRATIONS: list[Migration] = [m001_initial, m002_launch_address]


def migrate(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied REAL)")
    done = {row[0] for row in db.execute("SELECT name FROM _migrations")}
    for migration in MIGRATIONS:
        if migration.__name__ not in done:
            with db:
                migration(db)
                db.execute(
                    "INSERT INTO _migrations VALUES (?, strftime('%s','now'))",
                    (migration.__name__,),
                )
