"""The self-contained HTML report: one file, inline CSS and SVG, no network to open it.

``render_html(report)`` fills ``templates/report.html.j2`` with autoescaping on, so model
outputs, log lines and flag values always show as text; only the SVG made by
:mod:`bringup.report.plots` is inserted as markup. The trial matrix colours each
configuration of the searched axes by its verdict.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from bringup.checks.speculative import speculative_warnings
from bringup.contention import contention_warnings, cpu_left_cell
from bringup.files import replace_file
from bringup.report.model import KEY_FIGURES, RunReport, levels
from bringup.report.plots import latency_svg, throughput_svg
from bringup.report.text import fingerprint_line, fmt, short_id, verdict_counts
from bringup.store import TrialRow

_RANK = {"passed": 0, "failed": 1, "interrupted": 2, "running": 3}


@dataclass
class Cell:
    status: str  # passed failed interrupted running pruned untried
    text: str
    title: str
    trial: str | None = None


@dataclass
class Matrix:
    row_axes: list[str]
    col_axis: str | None
    col_values: list[Any]
    rows: list[tuple[list[Any], list[Cell]]]
    hidden: int = 0  # rows with nothing run or pruned, left out


def _same(flags: dict[str, Any], config: dict[str, Any]) -> bool:
    return all(str(flags.get(k)) == str(v) for k, v in config.items())


def _cell(report: RunReport, config: dict[str, Any]) -> Cell:
    trials = [t for t in report.trials if _same(t.flags, config)]
    if trials:
        t = min(trials, key=lambda t: (_RANK.get(t.status, 9), -(t.seq or 0)))
        sid = short_id(t.id, report.run_id)
        if t.status == "passed":
            value = t.metrics.get(report.objective)
            text = f"{fmt(value)}" if value is not None else "passed"
            title = f"{sid} passed; {report.objective} {fmt(value)}"
        elif t.status == "failed":
            text = t.category or "failed"
            title = f"{sid} failed at {t.stage}: {(t.evidence or [''])[0][:160]}"
        else:
            text, title = t.status, f"{sid} {t.status}"
        if len(trials) > 1:
            title += f" ({len(trials)} trials of this configuration)"
        return Cell(t.status, text, title, sid)
    for p in report.pruned:
        if _same(p.get("flags") or {}, config):
            return Cell("pruned", "pruned", p.get("reason") or "pruned")
    return Cell("untried", "not run", "not run in this sweep")


def trial_matrix(report: RunReport) -> Matrix:
    """Rows: every combination of all axes but one; columns: the axis with the most values.

    Rows in which no configuration was run or pruned are left out (``hidden`` counts them),
    so a large space shows what the sweep touched.
    """
    axes = list(report.axes)
    if not axes:
        return Matrix([], None, [""], [([], [_cell(report, {})])])
    col_axis = max(reversed(axes), key=lambda a: len(report.axes[a]))
    row_axes = [a for a in axes if a != col_axis]
    cols = report.axes[col_axis]
    rows = []
    hidden = 0
    for combo in itertools.product(*(report.axes[a] for a in row_axes)):
        base = dict(zip(row_axes, combo, strict=True))
        cells = [_cell(report, base | {col_axis: v}) for v in cols]
        if all(c.status == "untried" for c in cells) and row_axes:
            hidden += 1
            continue
        rows.append((list(combo), cells))
    return Matrix(row_axes, col_axis, cols, rows, hidden)


def _bad_outputs(trial: TrialRow) -> list[dict[str, Any]]:
    """Failed known-answer or garbage checks of a trial, with what the model said."""
    results = (trial.checks.get("correctness") or {}).get("results") or []
    return [r for r in results if isinstance(r, dict) and not r.get("passed")][:5]


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bringup.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.globals["short"] = short_id
    return env


def render_html(report: RunReport) -> str:
    tp, lat = throughput_svg(report), latency_svg(report)
    created = report.run.get("created")
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            r=report,
            run=report.run,
            rid=report.run_id,
            created=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created)) if created else "?",
            counts=verdict_counts(report),
            machine=fingerprint_line(report.fingerprint),
            matrix=trial_matrix(report),
            passed=report.passed(),
            failures=report.failures(),
            key_figures=KEY_FIGURES,
            cpu_left=lambda t: cpu_left_cell(t.contention),
            contention_warnings=contention_warnings(
                [(short_id(t.id, report.run_id), t.contention) for t in report.trials]
            )
            + speculative_warnings(
                [(short_id(t.id, report.run_id), t.checks) for t in report.trials]
            ),
            levels=levels,
            bad_outputs=_bad_outputs,
            throughput=Markup(tp) if tp else None,  # matplotlib output; its labels are escaped
            latency=Markup(lat) if lat else None,
        )
    )


def write_html(report: RunReport, path: str | Path) -> Path:
    return replace_file(path, render_html(report))
