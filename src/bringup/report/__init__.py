"""Reports of a run: terminal summary, JSON/CSV of every trial, a self-contained HTML page.

``load_report(store, ref)`` reads one run (secrets masked); ``render_text``,
``write_json``, ``write_csv`` and ``write_html`` present it.
"""

from bringup.report.export import report_dict, trial_rows, write_csv, write_json
from bringup.report.html import render_html, trial_matrix, write_html
from bringup.report.model import RunReport, levels, load_report
from bringup.report.text import render_text

__all__ = [
    "RunReport",
    "levels",
    "load_report",
    "render_html",
    "render_text",
    "report_dict",
    "trial_matrix",
    "trial_rows",
    "write_csv",
    "write_html",
    "write_json",
]
