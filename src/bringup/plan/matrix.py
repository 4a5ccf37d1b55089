"""The compatibility matrix: flag value by fingerprint, from recorded trials.

:func:`compatibility_matrix` takes trial rows as dicts (``flags``, ``status``,
``category``, ``fingerprint`` (dict), ``engine``, ``engine_version``; JSON text is
accepted for ``flags``/``fingerprint``) and says, for each flag value on each hardware and
engine version: ``works`` (some passed trial used it), the failure category seen most
often with it (when no trial with it passed), or ``not tried``. Rows still running,
skipped or interrupted say nothing and are left out.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bringup.fingerprint import hardware_label

NOT_TRIED = "not tried"
WORKS = "works"
_DECIDED = {"passed", "failed"}


@dataclass
class Cell:
    passed: int = 0
    failed: Counter[str] = field(default_factory=Counter)

    @property
    def text(self) -> str:
        if self.passed:
            return WORKS
        if self.failed:
            return self.failed.most_common(1)[0][0]
        return NOT_TRIED


@dataclass
class Matrix:
    columns: list[str]  # fingerprint labels: "<hardware> / <engine> <version>"
    rows: list[tuple[str, str]]  # (flag, value)
    cells: dict[tuple[str, str], dict[str, Cell]]

    def cell(self, flag: str, value: str, column: str) -> str:
        found = self.cells.get((flag, value), {}).get(column)
        return found.text if found else NOT_TRIED

    def table(self) -> list[list[str]]:
        """Header row then one row per flag value: ``flag``, ``value``, one cell per column."""
        out = [["flag", "value", *self.columns]]
        for flag, value in self.rows:
            out.append([flag, value, *(self.cell(flag, value, c) for c in self.columns)])
        return out


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value or {}


def column_label(row: Mapping[str, Any]) -> str:
    fp = _loads(row.get("fingerprint")) or {}
    engine = row.get("engine") or fp.get("engine") or "engine"
    version = row.get("engine_version") or fp.get("engine_version") or "unknown"
    try:
        hardware = hardware_label(fp) if fp else "unknown hardware"
    except (KeyError, TypeError, AttributeError):
        hardware = "unknown hardware"
    return f"{hardware} / {engine} {version}"


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def compatibility_matrix(rows: Iterable[Mapping[str, Any]]) -> Matrix:
    columns: list[str] = []
    keys: list[tuple[str, str]] = []
    cells: dict[tuple[str, str], dict[str, Cell]] = {}
    for row in rows:
        status = str(row.get("status") or "")
        if status not in _DECIDED:
            continue
        column = column_label(row)
        if column not in columns:
            columns.append(column)
        flags = _loads(row.get("flags")) or {}
        for flag, value in flags.items():
            key = (str(flag), _value_text(value))
            if key not in cells:
                cells[key] = {}
                keys.append(key)
            cell = cells[key].setdefault(column, Cell())
            if status == "passed":
                cell.passed += 1
            else:
                cell.failed[str(row.get("category") or "failed")] += 1
    keys.sort(key=lambda k: (k[0], k[1]))
    return Matrix(columns=columns, rows=keys, cells=cells)
