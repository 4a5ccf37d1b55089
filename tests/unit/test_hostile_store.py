"""The results database: another program's file or a newer schema is refused untouched
with one sentence; simultaneous first opens create the schema once."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.errors import StoreError
from bringup.store import Store


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))


def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users VALUES (1, 'ada')")
    before = _digest(db)
    with pytest.raises(StoreError, match="not a bringup results database"):
        Store(db)
    assert _digest(db) == before and _siblings(db) == ["app.db"]
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"users"}


def test_a_newer_schema_is_refused_untouched_by_every_command(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    Store(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO _migrations VALUES ('m999_future', 0)")
        conn.execute("ALTER TABLE runs ADD COLUMN future TEXT")
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = _digest(db)
    with pytest.raises(StoreError, match="newer bringup"):
        Store(db)
    for args in (["report"], ["matrix"], ["deploy", "--to", "script"]):
        res = CliRunner().invoke(cli, [*args, "--db", str(db)])
        assert res.exit_code == 2, (args, res.output)
        assert "newer bringup" in res.output and "Traceback" not in res.output
        assert res.output.count("\n") == 1
    assert _digest(db) == before


def _open_and_write(path: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()
    store = Store(path)
    store.create_run(
        spec_path=None, spec_digest="d", spec_json="{}", engine="e", fingerprint={},
        fingerprint_key="f", run_dir="",
    )  # fmt: skip
    store.close()


def test_simultaneous_first_opens_create_the_schema_once(tmp_path: Path) -> None:
    for attempt in range(2):
        path = str(tmp_path / f"new{attempt}.db")
        ctx = multiprocessing.get_context("spawn")  # no fork of a threaded pytest
        barrier = ctx.Barrier(12)
        procs = [ctx.Process(target=_open_and_write, args=(path, barrier)) for _ in range(12)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=120)
        assert [p.exitcode for p in procs] == [0] * 12
        store = Store(path)
        assert store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 12
        names = [r[0] for r in store.db.execute("SELECT name FROM _migrations")]
        assert sorted(names) == sorted(set(names))
