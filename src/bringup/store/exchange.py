"""Decided verdicts carried between stores: ``bringup matrix --export`` / ``sweep --import``.

:func:`export_verdicts` writes every decided verdict of a store (passed, or failed with its
failure signature: category, rule, evidence, remedy, implicated flags) with the launch
identity (``config_key``), the fingerprint it was decided on (hardware, GPU architecture,
engine and version, model) and where it was seen. :func:`import_verdicts` adds them to
another store as the rows of one ``imported`` run, each under its own fingerprint: a sweep
reuses one only where its own (or its node's) fingerprint and launch identity are the same,
exactly as it reuses its own verdicts, and the reused row cites where it was seen
(:meth:`~bringup.store.Store.provenance`). A transient failure, a reused row and a row
still running decide nothing and are not exported. Importing the same file twice adds
nothing; a malformed file is refused whole, with one sentence naming what is wrong.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bringup.errors import BringupError
from bringup.fingerprint import fingerprint_key, hardware_label
from bringup.store.db import DECIDED, Store
from bringup.store.rows import TrialRow
from bringup.verdict import Category, Stage, Status

FORMAT = "bringup-verdicts"
VERSION = 1
IMPORTED = "imported"  # the status of the run rows that hold imported verdicts
SEEN_ON = ": seen on "  # an imported row's note: "imported from FILE: seen on WHERE"

# what a verdict needs to be reused and to prune: checked on import, every entry
_REQUIRED = ("trial_id", "config_key", "fingerprint_key", "fingerprint", "engine", "flags")


@dataclass
class ImportSummary:
    added: int
    known: int  # already in this store (imported before, or decided here)
    run_id: str | None  # the imported run's id (None: nothing added)


def _seen(row: TrialRow) -> str:
    """Where a verdict was decided, for the citation of a reuse."""
    place = row.node or "the driver host"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(row.updated))
    return f"{place} in run {row.run_id} at {when}"


def export_verdicts(store: Store, path: Path) -> int:
    """Write every decided verdict of ``store`` to ``path`` (JSON); return how many."""
    # the fingerprint a verdict was decided on: its node's, else its run's (read by
    # TrialRow.from_row, which decodes every column the way the rest of bringup reads it)
    rows = store.db.execute(
        "SELECT t.*, COALESCE(t.node_fingerprint_json, r.fingerprint_json) AS fingerprint_json,"
        " r.status AS run_status"
        " FROM trials t JOIN runs r ON r.id = t.run_id"
        " WHERE t.status IN (?,?) AND t.reused_from IS NULL AND t.transient = 0"
        " ORDER BY t.updated",
        DECIDED,
    ).fetchall()
    host = socket.gethostname()
    verdicts = []
    for r in rows:
        row = TrialRow.from_row(r)
        fp = row.fingerprint
        imported = r["run_status"] == IMPORTED
        verdicts.append(
            {
                "trial_id": row.id,
                "config_key": row.config_key,
                "fingerprint_key": row.fingerprint_key,
                "fingerprint": fp,
                "hardware": hardware_label(fp) if fp else None,
                "gpu_architecture": _architecture(fp),
                "engine": row.engine,
                "engine_version": row.engine_version,
                "flags": row.flags,
                "status": row.status.value,
                "stage": row.stage.value,
                "category": row.category.value if row.category else None,
                "rule": row.rule,
                "confidence": row.confidence,
                "implicated": row.implicated,
                "evidence": row.evidence,
                "remedy": row.remedy,
                "detail": row.detail,
                "metrics": row.metrics,
                "chosen": row.chosen,
                "command": row.command,
                "purpose": row.purpose,
                # an imported verdict keeps the place it was first seen
                "seen": _first_seen(row.note) if imported else f"{host}: {_seen(row)}",
                "decided_at": row.updated,
            }
        )
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": time.time(),
        "exported_from": host,
        "verdicts": verdicts,
    }
    try:
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise BringupError(f"cannot write {path} ({exc.strerror}); pass another FILE.") from exc
    return len(verdicts)


def _first_seen(note: str | None) -> str:
    _, sep, seen = (note or "").partition(SEEN_ON)
    return seen if sep else "another store"


def provenance(store: Store, trial_id: str) -> str | None:
    """Where an imported verdict was seen (its row's note); None for a verdict made here."""
    row = store.db.execute(
        "SELECT t.note FROM trials t JOIN runs r ON r.id = t.run_id WHERE t.id=? AND r.status=?",
        (trial_id, IMPORTED),
    ).fetchone()
    return str(row[0]) if row and row[0] else None


def _architecture(fp: dict[str, Any]) -> str | None:
    gpus = fp.get("gpus") or []
    if gpus and isinstance(gpus[0], dict) and gpus[0].get("compute_capability"):
        return "sm" + str(gpus[0]["compute_capability"]).replace(".", "")
    return None


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BringupError(f"cannot read {path} ({exc.strerror}); pass an existing file.") from exc
    except ValueError as exc:
        raise BringupError(
            f"{path} is not JSON ({exc}); pass a file written by `bringup matrix --export`."
        ) from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise BringupError(f"{path} is not a bringup verdicts file (written by `matrix --export`).")
    if doc.get("version") != VERSION:
        raise BringupError(
            f"{path} has verdicts format version {doc.get('version')!r}; this bringup reads"
            f" version {VERSION}: export it again with this bringup."
        )
    verdicts = doc.get("verdicts")
    if not isinstance(verdicts, list):
        raise BringupError(f"{path} has no verdicts list; export it again.")
    for i, v in enumerate(verdicts, 1):
        _check(path, i, v)
    return verdicts


def _check(path: Path, i: int, v: Any) -> None:
    where = f"{path}: verdict {i}"
    if not isinstance(v, dict):
        raise BringupError(f"{where} is not an object; export the file again.")
    missing = [k for k in _REQUIRED if k not in v]
    if missing:
        raise BringupError(f"{where} lacks {', '.join(missing)}; export the file again.")
    try:
        Status(str(v.get("status")))
        Stage(str(v.get("stage")))
        if v.get("category") is not None:
            Category(v["category"])
    except ValueError as exc:
        raise BringupError(f"{where}: {exc}; export the file again with this bringup.") from exc
    if v["status"] not in DECIDED:
        raise BringupError(f"{where} is {v['status']}, not a decided verdict; export it again.")
    if not isinstance(v["fingerprint"], dict) or not isinstance(v["flags"], dict):
        raise BringupError(f"{where}: fingerprint and flags must be objects.")
    # the key decides reuse: it must be the one its fingerprint gives, or the file was edited
    if fingerprint_key(v["fingerprint"]) != v["fingerprint_key"]:
        raise BringupError(
            f"{where} ({v['trial_id']}): fingerprint_key does not match its fingerprint;"
            " the file was edited: export it again."
        )


def import_verdicts(store: Store, path: Path) -> ImportSummary:
    """Add the verdicts of ``path`` to ``store`` as one ``imported`` run (none already known)."""
    verdicts = _load(path)
    fresh = [v for v in verdicts if not _known(store, str(v["trial_id"]))]
    if not fresh:
        return ImportSummary(0, len(verdicts), None)
    # one transaction: a file that fails half-way adds nothing
    store.db.execute("BEGIN IMMEDIATE")
    try:
        run_id = _add(store, path, fresh)
        store.db.execute("COMMIT")
    except BaseException:
        store.db.execute("ROLLBACK")
        raise
    return ImportSummary(len(fresh), len(verdicts) - len(fresh), run_id)


def _known(store: Store, trial_id: str) -> bool:
    return store.db.execute("SELECT 1 FROM trials WHERE id=?", (trial_id,)).fetchone() is not None


def _add(store: Store, path: Path, fresh: list[dict[str, Any]]) -> str:
    run_id = store.create_run(
        spec_path=str(path),
        spec_digest="",
        spec_json="{}",
        engine=str(fresh[0]["engine"]),
        fingerprint={},  # each row carries the fingerprint it was decided on
        fingerprint_key="",
        run_dir="",
    )
    store.db.execute("UPDATE runs SET status=? WHERE id=?", (IMPORTED, run_id))
    now = time.time()
    for seq, v in enumerate(fresh, 1):
        seen = str(v.get("seen") or "another store")
        store.db.execute(
            "INSERT INTO trials (id, run_id, seq, config_key, fingerprint_key, engine,"
            " engine_version, purpose, flags_json, status, stage, category, evidence_json,"
            " remedy, detail, metrics_json, chosen_json, command_json, note, started, updated,"
            " rule, confidence, implicated_json, node, node_fingerprint_json)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                v["trial_id"],
                run_id,
                seq,
                v["config_key"],
                v["fingerprint_key"],
                v["engine"],
                v.get("engine_version"),
                v.get("purpose") or "explore",
                json.dumps(v["flags"]),
                v["status"],
                v["stage"],
                v.get("category"),
                json.dumps(v.get("evidence") or []),
                v.get("remedy"),
                v.get("detail"),
                json.dumps(v.get("metrics") or {}),
                json.dumps(v.get("chosen") or {}),
                json.dumps(v.get("command") or []),
                f"imported from {path.name}{SEEN_ON}{seen}",
                float(v.get("decided_at") or now),
                float(v.get("decided_at") or now),
                v.get("rule"),
                v.get("confidence"),
                json.dumps(v.get("implicated") or []),
                f"{IMPORTED}: {seen.split(' in run ')[0]}",
                json.dumps(v["fingerprint"]),
            ),
        )
    return run_id
