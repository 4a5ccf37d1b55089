"""The compatibility matrix: flag value by fingerprint, from recorded trials.

:func:`compatibility_matrix` takes typed trial rows (:class:`~bringup.store.TrialRow`,
with their run's fingerprint joined, as ``Store.iter_all_trials`` gives them) and says, for
each flag value on each hardware and engine version, what the trials with it concluded,
with counts. The deciding rule (``RULE``): ``works`` when every decided trial with the
value passed; the failure category when none did; ``depends`` when both happened, and
then each outcome names the other flag values it came with that the other outcomes never
had (``works 4 with --flash-attn=on; invalid_config 2 with --flash-attn=off``). A value
that passes only beside other values is never shown as plain ``works``. With
``rules=True`` a failure also names the diagnosis rule that decided its category most
often. Rows still running, skipped or interrupted say nothing and are left out, and so
are reused rows (an earlier trial's verdict copied into a later run): they would count
one launch twice.
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
DEPENDS = "depends"
RULE = (
    "works: every decided trial with the value passed; a category: none passed; "
    "depends: both, each outcome with the other values only it came with"
)
_DECIDED = (Status.PASSED, Status.FAILED)
_MAX_CONDITIONS = 2  # the distinguishing values shown per outcome


@dataclass
class Cell:
    passed: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    rules: dict[str, Counter[str]] = field(default_factory=dict)  # category -> deciding rules
    # each decided trial: its outcome (works or a category) and its other flag values
    seen: list[tuple[str, frozenset[tuple[str, str]]]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The cell's word by :data:`RULE`."""
        if self.passed and self.failed:
            return DEPENDS
        if self.passed:
            return WORKS
        if self.failed:
            return self.failed.most_common(1)[0][0]
        return NOT_TRIED

    def conditions(self, outcome: str) -> list[str]:
        """Other flag values every trial with ``outcome`` had and no other outcome had."""
        mine = [others for o, others in self.seen if o == outcome]
        rest = set().union(*(others for o, others in self.seen if o != outcome))
        if not mine or not rest:
            return []
        common = frozenset.intersection(*mine) - rest
        return [f"{flag}={value}" for flag, value in sorted(common)][:_MAX_CONDITIONS]

    def describe(self, rules: bool = False) -> str:
        if not self.passed and not self.failed:
            return NOT_TRIED
        outcomes = ([(WORKS, self.passed)] if self.passed else []) + self.failed.most_common()
        parts = []
        for outcome, count in outcomes:
            text = f"{outcome} {count}"
            cond = self.conditions(outcome)
            if cond:
                text += " with " + " ".join(cond)
            seen = self.rules.get(outcome)
            if rules and seen:
                text += f" ({seen.most_common(1)[0][0]})"
            parts.append(text)
        return "; ".join(parts)


@dataclass
class Matrix:
    columns: list[str]  # fingerprint labels: "<hardware> / <engine> <version>"
    rows: list[tuple[str, str]]  # (flag, value)
    cells: dict[tuple[str, str], dict[str, Cell]]

    def cell(self, flag: str, value: str, column: str, rules: bool = False) -> str:
        found = self.cells.get((flag, value), {}).get(column)
        return found.describe(rules) if found else NOT_TRIED

    def verdict(self, flag: str, value: str, column: str) -> str:
        """The cell's word alone: works, depends, a category or not tried."""
        found = self.cells.get((flag, value), {}).get(column)
        return found.text if found else NOT_TRIED

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
        if row.status not in _DECIDED or row.reused_from:
            continue
        column = column_label(row)
        if column not in columns:
            columns.append(column)
        pairs = [(str(flag), _value_text(value)) for flag, value in row.flags.items()]
        if row.status is Status.PASSED:
            outcome = WORKS
        else:
            outcome = row.category.value if row.category else "failed"
        for key in pairs:
            if key not in cells:
                cells[key] = {}
                keys.append(key)
            cell = cells[key].setdefault(column, Cell())
            cell.seen.append((outcome, frozenset(p for p in pairs if p[0] != key[0])))
            if row.status is Status.PASSED:
                cell.passed += 1
            else:
                cell.failed[outcome] += 1
                if row.rule:
                    cell.rules.setdefault(outcome, Counter())[row.rule] += 1
    keys.sort(key=lambda k: (k[0], k[1]))
    return Matrix(columns=columns, rows=keys, cells=cells)
