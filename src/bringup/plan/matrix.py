"""The compatibility matrix: flag value by fingerprint, from recorded trials.

:func:`compatibility_matrix` takes typed trial rows (:class:`~bringup.store.TrialRow`,
with their run's fingerprint joined, as ``Store.iter_all_trials`` gives them) and says, for
each flag value on each hardware and engine version: ``works`` (some passed trial used
it), the failure category seen most often with it (when no trial with it passed), or
``not tried``. With ``rules=True`` a failed cell also names the diagnosis rule that decided
that category most often. Rows still running, skipped or interrupted say nothing and are
left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bringup.fingerprint import hardware_label
from bringup.store.rows import TrialRow
from bringup.verdict import Status

NOT_TRIED = "not tried"
WORKS = "works"
_DECIDED = (Status.PASSED, Status.FAILED)


@dataclass
class Cell:
    passed: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    rules: dict[str, Counter[str]] = field(default_factory=dict)  # category -> deciding rules

    @property
    def text(self) -> str:
        if self.passed:
            return WORKS
        if self.failed:
            return self.failed.most_common(1)[0][0]
        return NOT_TRIED

    @property
    def rule(self) -> str | None:
        """The rule that most often decided the cell's category (None: works or unknown)."""
        if self.passed or not self.failed:
            return None
        seen = self.rules.get(self.text)
        return seen.most_common(1)[0][0] if seen else None

    def describe(self, rules: bool = False) -> str:
        return f"{self.text} ({self.rule})" if rules and self.rule else self.text


@dataclass
class Matrix:
    columns: list[str]  # fingerprint labels: "<hardware> / <engine> <version>"
    rows: list[tuple[str, str]]  # (flag, value)
    cells: dict[tuple[str, str], dict[str, Cell]]

    def cell(self, flag: str, value: str, column: str, rules: bool = False) -> str:
        found = self.cells.get((flag, value), {}).get(column)
        return found.describe(rules) if found else NOT_TRIED

    def table(self, rules: bool = False) -> list[list[str]]:
        """Header row then one row per flag value: ``flag``, ``value``, one cell per column."""
        out = [["flag", "value", *self.columns]]
        for flag, value in self.rows:
            out.append([flag, value, *(self.cell(flag, value, c, rules) for c in self.columns)])
        return out


def column_label(row: TrialRow) -> str:
    fp = row.fingerprint
    engine = row.engine or fp.get("engine") or "engine"
    version = row.engine_version or fp.get("engine_version") or "unknown"
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


def compatibility_matrix(rows: Iterable[TrialRow]) -> Matrix:
    columns: list[str] = []
    keys: list[tuple[str, str]] = []
    cells: dict[tuple[str, str], dict[str, Cell]] = {}
    for row in rows:
        if row.status not in _DECIDED:
            continue
        column = column_label(row)
        if column not in columns:
            columns.append(column)
        for flag, value in row.flags.items():
            key = (str(flag), _value_text(value))
            if key not in cells:
                cells[key] = {}
                keys.append(key)
            cell = cells[key].setdefault(column, Cell())
            if row.status is Status.PASSED:
                cell.passed += 1
            else:
                category = row.category.value if row.category else "failed"
                cell.failed[category] += 1
                if row.rule:
                    cell.rules.setdefault(category, Counter())[row.rule] += 1
    keys.sort(key=lambda k: (k[0], k[1]))
    return Matrix(columns=columns, rows=keys, cells=cells)
