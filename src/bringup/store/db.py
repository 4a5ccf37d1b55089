"""The SQLite store of runs and trials.

Every stage change of a trial is an UPDATE committed at once, so a crash or Ctrl-C of
bringup loses nothing and a re-run resumes: trials already decided (passed or failed)
for the same configuration and fingerprint are reused unless ``rerun`` is asked.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bringup.errors import StoreError
from bringup.plan.base import Pruned
from bringup.secrets import (
    flag_secret_values,
    redact_argv,
    redact_flags,
    redact_text,
    secret_values,
)
from bringup.store.migrations import check_schema, migrate
from bringup.store.rows import TrialRow
from bringup.verdict import Status, TrialResult

DECIDED = (Status.PASSED.value, Status.FAILED.value)


def launch_key(
    engine: str, model: str | None, fixed_args: list[str], flags: Mapping[str, Any]
) -> str:
    """Identity of a launch (engine, model, fixed args, flags): what would make one behave
    differently; stored as the trials table's ``config_key`` column."""
    payload = json.dumps(
        {
            "engine": engine,
            "model": model,
            "args": fixed_args,
            "flags": dict(sorted(flags.items())),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _loads(text: str | None, default: Any) -> Any:
    return json.loads(text) if text else default


def _retry_locked(step: Callable[[], object], within_s: float = 30.0) -> None:
    """Run ``step``, again while SQLite says the file is locked. A journal-mode change that
    races another connection's first open can answer SQLITE_BUSY at once, without waiting
    on the busy timeout; simultaneous first opens must still all succeed."""
    deadline = time.monotonic() + within_s
    delay = 0.01
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


class Store:
    def __init__(self, path: str | Path = "bringup.db"):
        self.path = Path(path)
        try:
            if str(path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path), timeout=30, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            # a foreign or newer file is refused untouched
            _retry_locked(lambda: check_schema(self.db, str(path)))
            _retry_locked(lambda: self.db.execute("PRAGMA journal_mode=WAL"))
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            migrate(self.db, str(path))
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open the results database {path} ({exc}); pass --db with a writable path."
            ) from exc

    def close(self) -> None:
        self.db.close()

    # runs -------------------------------------------------------------------------
    def create_run(
        self,
        *,
        spec_path: str | None,
        spec_digest: str,
        spec_json: str,
        engine: str,
        fingerprint: dict[str, Any],
        fingerprint_key: str,
        run_dir: str,
    ) -> str:
        run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        now = time.time()
        self.db.execute(
            "INSERT INTO runs (id, created, updated, spec_path, spec_digest, spec_json, engine,"
            " fingerprint_json, fingerprint_key, status, run_dir) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                now,
                now,
                spec_path,
                spec_digest,
                spec_json,
                engine,
                json.dumps(fingerprint),
                fingerprint_key,
                "running",
                run_dir,
            ),
        )
        return run_id

    def finish_run(
        self, run_id: str, status: str, winner: str | None, notes: list[str], pruned: list[Pruned]
    ) -> None:
        self.db.execute(
            "UPDATE runs SET status=?, winner_trial=?, notes_json=?, updated=? WHERE id=?",
            (status, winner, json.dumps(notes), time.time(), run_id),
        )
        self.db.execute("DELETE FROM pruned WHERE run_id=?", (run_id,))
        self.db.executemany(
            "INSERT INTO pruned VALUES (?,?,?,?)",
            [(run_id, json.dumps(p.config), p.by_trial, p.reason) for p in pruned],
        )

    def run(self, run_id: str | None = None) -> dict[str, Any] | None:
        if run_id:
            row = self.db.execute(
                # ids are literal: a prefix match, never a LIKE pattern (% and _ match nothing)
                "SELECT * FROM runs WHERE id=? OR substr(id, 1, length(?))=?"
                " ORDER BY created DESC LIMIT 1",
                (run_id, run_id, run_id),
            ).fetchone()
        else:
            # the latest sweep: rows imported from elsewhere (store.exchange) are not one
            row = self.db.execute(
                "SELECT * FROM runs WHERE status != 'imported' ORDER BY created DESC LIMIT 1"
            ).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["fingerprint"] = _loads(out.pop("fingerprint_json"), {})
        out["notes"] = _loads(out.pop("notes_json"), [])
        out["spec"] = _loads(out.pop("spec_json"), {})
        out["pruned"] = [
            {"flags": json.loads(r["flags_json"]), "by_trial": r["by_trial"], "reason": r["reason"]}
            for r in self.db.execute("SELECT * FROM pruned WHERE run_id=?", (out["id"],))
        ]
        return out

    # trials -----------------------------------------------------------------------
    def next_seq(self, run_id: str) -> int:
        row = self.db.execute("SELECT MAX(seq) FROM trials WHERE run_id=?", (run_id,)).fetchone()
        return int(row[0] or 0) + 1

    def save_trial(
        self,
        run_id: str,
        seq: int,
        result: TrialResult,
        *,
        cfg_key: str,
        fingerprint_key: str,
        engine: str,
        engine_version: str,
        purpose: str = "explore",
        reused_from: str | None = None,
        secrets: Sequence[str] = (),
        node: str | None = None,
        node_fingerprint: dict[str, Any] | None = None,
    ) -> None:
        """``secrets``: clear values known elsewhere (the spec's env) to mask as well.
        ``node``/``node_fingerprint``: where a placing executor ran it, when not here."""
        f = result.failure
        now = time.time()
        # what the engine needs in clear never reaches the database
        hidden = [*secrets, *secret_values(result.command, {}), *flag_secret_values(result.flags)]
        evidence = [redact_text(line, hidden) for line in (f.evidence if f else [])]
        flags = redact_flags(result.flags)
        # one statement per save: the failure's rule (m006) and the node (m007) included. A
        # save that names no node keeps the node and fingerprint key an earlier one recorded
        self.db.execute(
            "INSERT INTO trials (id, run_id, seq, config_key, fingerprint_key, engine,"
            " engine_version,"
            " purpose, flags_json, status, stage, category, evidence_json, remedy, detail,"
            " timings_json, metrics_json, checks_json, chosen_json, command_json, port, pid,"
            " log_path, note, reused_from, started, updated, host, health_path,"
            " contention_json, transient, rule, confidence, implicated_json, node,"
            " node_fingerprint_json)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(id) DO UPDATE SET status=excluded.status, stage=excluded.stage,"
            " category=excluded.category, evidence_json=excluded.evidence_json,"
            " remedy=excluded.remedy, detail=excluded.detail, timings_json=excluded.timings_json,"
            " metrics_json=excluded.metrics_json, checks_json=excluded.checks_json,"
            " chosen_json=excluded.chosen_json, command_json=excluded.command_json,"
            " port=excluded.port, pid=excluded.pid, log_path=excluded.log_path,"
            " note=excluded.note, updated=excluded.updated, host=excluded.host,"
            " health_path=excluded.health_path, contention_json=excluded.contention_json,"
            " transient=excluded.transient, rule=excluded.rule,"
            " confidence=excluded.confidence, implicated_json=excluded.implicated_json,"
            " fingerprint_key=CASE WHEN excluded.node IS NULL THEN trials.fingerprint_key"
            " ELSE excluded.fingerprint_key END,"
            " node=COALESCE(excluded.node, trials.node),"
            " node_fingerprint_json=CASE WHEN excluded.node IS NULL"
            " THEN trials.node_fingerprint_json ELSE excluded.node_fingerprint_json END",
            (
                result.trial_id,
                run_id,
                seq,
                cfg_key,
                fingerprint_key,
                engine,
                engine_version,
                purpose,
                json.dumps(flags, default=str),
                result.status.value,
                result.stage.value,
                f.category.value if f else None,
                json.dumps(evidence),
                redact_text(f.remedy, hidden) if f and f.remedy else None,
                redact_text(f.detail, hidden) if f and f.detail else None,
                json.dumps(result.timings),
                json.dumps(result.metrics, default=str),
                redact_text(json.dumps(result.checks, default=str), hidden),
                json.dumps(result.chosen),
                json.dumps(redact_argv(result.command)),
                result.port,
                result.pid,
                result.log_path,
                redact_text(result.note, hidden) if result.note else None,
                reused_from,
                now,
                now,
                result.host,
                result.health_path,
                json.dumps({k: c.model_dump() for k, c in result.contention.items()}),
                int(bool(f and f.transient)),
                f.rule if f else None,
                f.confidence if f else None,
                json.dumps(f.flags if f else []),
                node,
                json.dumps(node_fingerprint) if node is not None and node_fingerprint else None,
            ),
        )

    def decided(self, cfg_key: str, fingerprint_key: str) -> TrialResult | None:
        """The latest passed/failed verdict for this configuration on this fingerprint.

        A transient failure (a timeout on a loaded machine) decides nothing: it is re-run."""
        row = self.db.execute(
            "SELECT * FROM trials WHERE config_key=? AND fingerprint_key=? AND status IN (?,?)"
            " AND reused_from IS NULL AND transient = 0 ORDER BY updated DESC LIMIT 1",
            (cfg_key, fingerprint_key, *DECIDED),
        ).fetchone()
        return TrialRow.from_row(row).to_result() if row else None

    def decided_by_fingerprint(self, cfg_key: str) -> dict[str, TrialResult]:
        """The latest decided verdict of this configuration on each fingerprint it met (an
        executor placing trials on several kinds of node reuses only its node's)."""
        rows = self.db.execute(
            "SELECT * FROM trials WHERE config_key=? AND status IN (?,?)"
            " AND reused_from IS NULL AND transient = 0 ORDER BY updated",
            (cfg_key, *DECIDED),
        )
        return {r["fingerprint_key"]: TrialRow.from_row(r).to_result() for r in rows}

    def trials(self, run_id: str | None = None) -> list[TrialRow]:
        if run_id:
            rows = self.db.execute("SELECT * FROM trials WHERE run_id=? ORDER BY seq", (run_id,))
        else:
            rows = self.db.execute("SELECT * FROM trials ORDER BY updated")
        return [TrialRow.from_row(r) for r in rows]

    def iter_all_trials(self) -> Iterator[TrialRow]:
        """Every trial with its fingerprint (for the compatibility matrix): the node's where
        an executor placed it elsewhere, else its run's."""
        for r in self.db.execute(
            "SELECT t.*, COALESCE(t.node_fingerprint_json, r.fingerprint_json) AS fingerprint_json"
            " FROM trials t JOIN runs r ON r.id = t.run_id"
            " ORDER BY t.updated"
        ):
            yield TrialRow.from_row(r)

    def trial(self, trial_id: str) -> TrialRow | None:
        row = self.db.execute(
            "SELECT * FROM trials WHERE id=? OR substr(id, 1, length(?))=?"
            " ORDER BY updated DESC LIMIT 1",
            (trial_id, trial_id, trial_id),
        ).fetchone()
        return TrialRow.from_row(row) if row else None

    def mark_interrupted(self, run_id: str) -> int:
        cur = self.db.execute(
            "UPDATE trials SET status=?, updated=? WHERE run_id=? AND status=?",
            (Status.INTERRUPTED.value, time.time(), run_id, Status.RUNNING.value),
        )
        self.db.execute(
            "UPDATE runs SET status='interrupted', updated=? WHERE id=?", (time.time(), run_id)
        )
        return cur.rowcount

    # reference answers (accuracy gate) -----------------------------------------------
    def save_reference(self, fingerprint_key: str, cfg_key: str, answers: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO reference_answers VALUES (?,?,?,?)",
            (fingerprint_key, cfg_key, json.dumps(answers), time.time()),
        )

    def reference(self, fingerprint_key: str, cfg_key: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT answers_json FROM reference_answers WHERE fingerprint_key=? AND config_key=?",
            (fingerprint_key, cfg_key),
        ).fetchone()
        return json.loads(row[0]) if row else None
