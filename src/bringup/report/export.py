"""Every trial of a run as JSON (full records) or CSV (one flat row per trial).

JSON keeps the run, its fingerprint, pruned configurations and each trial as stored
(secrets already masked by :func:`bringup.report.model.load_report`). CSV has the
searched flags as columns, the verdict, the timings and every metric the run measured.
"""

from __future__ import annotations

import csv
import io
import json
import shlex
from pathlib import Path
from typing import Any

from bringup.files import replace_file
from bringup.report.model import RunReport

BASE_COLUMNS = ("trial", "seq", "status", "stage", "category", "purpose", "reused_from")
TAIL_COLUMNS = ("remedy", "evidence", "detail", "other_flags", "command", "log_path")


def report_dict(report: RunReport) -> dict[str, Any]:
    return {
        "run": report.run,
        "objective": {"metric": report.objective, "larger_is_better": report.larger_is_better},
        "winner": report.winner.id if report.winner else None,
        "counts": report.counts,
        "axes": report.axes,
        "fingerprint": report.fingerprint,
        "engine_version": report.engine_version,
        "pruned": report.pruned,
        "trials": [t.to_dict() for t in report.trials],
    }


def write_json(report: RunReport, path: str | Path) -> Path:
    return replace_file(path, json.dumps(report_dict(report), indent=2, default=str) + "\n")


def trial_rows(report: RunReport) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows): one row per trial, the union of timing and metric keys as columns."""
    timing_keys = sorted({k for t in report.trials for k in t.timings})
    metric_keys = sorted(
        {
            k
            for t in report.trials
            for k, v in t.metrics.items()
            if isinstance(v, int | float | str | bool)
        }
    )
    axes = list(report.axes)
    columns = [*BASE_COLUMNS, *axes, *timing_keys, *metric_keys, *TAIL_COLUMNS]
    rows = []
    for t in report.trials:
        flags = t.flags
        row: dict[str, Any] = {
            "trial": t.id,
            "seq": t.seq,
            "status": t.status.value,
            "stage": t.stage.value,
            "category": t.category.value if t.category else "",
            "purpose": t.purpose or "",
            "reused_from": t.reused_from or "",
        }
        row.update({k: flags.get(k, "") for k in axes})
        row.update({k: t.timings.get(k, "") for k in timing_keys})
        row.update({k: t.metrics.get(k, "") for k in metric_keys})
        row["remedy"] = t.remedy or ""
        row["evidence"] = " | ".join(t.evidence)
        row["detail"] = t.detail or ""
        other = {k: v for k, v in flags.items() if k not in report.axes}
        row["other_flags"] = json.dumps(other) if other else ""
        row["command"] = shlex.join(t.command)
        row["log_path"] = t.log_path or ""
        rows.append(row)
    return columns, rows


def write_csv(report: RunReport, path: str | Path) -> Path:
    columns, rows = trial_rows(report)
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return replace_file(path, buf.getvalue())
