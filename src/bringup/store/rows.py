"""Typed rows read back from the store: what report, deploy and the matrix consume.

A :class:`TrialRow` is one stored trial with its JSON columns decoded and its status,
stage and category as enums; :meth:`TrialRow.to_result` gives the
:class:`~bringup.verdict.TrialResult` again (a reused verdict), :meth:`TrialRow.to_dict`
the plain form written by JSON export. ``host``, ``port`` and ``health_path`` are the
facts recorded at launch (None on rows written before they were recorded).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from bringup.contention import Contention, from_stored
from bringup.verdict import Category, Failure, Stage, Status, TrialResult

_JSON_DEFAULTS: dict[str, Any] = {
    "flags": {},
    "evidence": [],
    "timings": {},
    "metrics": {},
    "checks": {},
    "chosen": {},
    "command": [],
    "implicated": [],
}


def _loads(text: str | None, default: Any) -> Any:
    return json.loads(text) if text else default


@dataclass
class TrialRow:
    id: str
    flags: dict[str, Any]
    status: Status
    stage: Stage
    run_id: str = ""
    seq: int = 0
    config_key: str = ""
    fingerprint_key: str = ""
    engine: str = ""
    engine_version: str | None = None
    purpose: str | None = None
    category: Category | None = None
    evidence: list[str] = field(default_factory=list)
    remedy: str | None = None
    detail: str | None = None
    rule: str | None = None  # the diagnosis rule that decided the failure
    confidence: float | None = None
    implicated: list[str] = field(default_factory=list)  # the flags that rule implicates
    timings: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    chosen: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    host: str | None = None
    port: int | None = None
    health_path: str | None = None
    pid: int | None = None
    log_path: str | None = None
    note: str | None = None
    reused_from: str | None = None
    started: float = 0.0
    updated: float = 0.0
    fingerprint: dict[str, Any] = field(default_factory=dict)  # the run's, where joined
    node: str | None = None  # where a placing executor ran it (None: beside the store)
    contention: dict[str, Contention] = field(default_factory=dict)  # see bringup.contention
    transient: bool = False  # the failure was an accident of the moment

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> TrialRow:
        d = dict(row)
        for key, default in _JSON_DEFAULTS.items():
            d[key] = _loads(d.pop(f"{key}_json", None), type(default)())
        d["fingerprint"] = _loads(d.pop("fingerprint_json", None), {})
        d.pop("node_fingerprint_json", None)  # read joined, as "fingerprint"
        d["contention"] = from_stored(_loads(d.pop("contention_json", None), {}))
        d["transient"] = bool(d.get("transient"))
        d["status"] = Status(d["status"])
        d["stage"] = Stage(d["stage"])
        d["category"] = Category(d["category"]) if d.get("category") else None
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    def to_result(self) -> TrialResult:
        failure = None
        if self.category is not None:
            failure = Failure(
                stage=self.stage,
                category=self.category,
                evidence=self.evidence,
                remedy=self.remedy,
                detail=self.detail,
                transient=self.transient,
                rule=self.rule,
                confidence=self.confidence,
                flags=self.implicated,
            )
        return TrialResult(
            trial_id=self.id,
            flags=self.flags,
            status=self.status,
            stage=self.stage,
            failure=failure,
            command=self.command,
            host=self.host,
            port=self.port,
            health_path=self.health_path,
            pid=self.pid,
            log_path=self.log_path,
            timings=self.timings,
            metrics=self.metrics,
            checks=self.checks,
            chosen=self.chosen,
            note=self.note,
            contention=self.contention,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (enums as their strings); the fingerprint only if joined."""
        d = dataclasses.asdict(self)
        d["status"], d["stage"] = self.status.value, self.stage.value
        d["category"] = self.category.value if self.category else None
        d["contention"] = {k: c.model_dump() for k, c in self.contention.items()}
        if not self.fingerprint:
            d.pop("fingerprint")
        return d
