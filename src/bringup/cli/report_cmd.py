"""``bringup report [RUN]``: the terminal summary, and JSON, CSV or HTML on request."""

from __future__ import annotations

from pathlib import Path

import click

from bringup.errors import BringupError
from bringup.report import load_report, render_text, write_csv, write_html, write_json
from bringup.store import Store
from bringup.textsafe import printable


def open_store(db: str) -> Store:
    """The results database; a missing file is the user's to fix, not an empty database."""
    if db != ":memory:" and not Path(db).is_file():
        raise BringupError(f"no results database at {db}; run `bringup sweep` first or pass --db.")
    return Store(db)


@click.command("report")
@click.argument("run", required=False)
@click.option("--db", default="bringup.db", show_default=True, help="SQLite results file.")
@click.option(
    "--json", "json_path", type=click.Path(dir_okay=False), help="Write every trial as JSON."
)
@click.option(
    "--csv", "csv_path", type=click.Path(dir_okay=False), help="Write every trial as CSV."
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    help="Write a self-contained HTML report.",
)
def report(
    run: str | None, db: str, json_path: str | None, csv_path: str | None, html_path: str | None
) -> None:
    """Summarise RUN (default: the latest): verdicts, winner, top configurations, failures."""
    store = open_store(db)
    try:
        rep = load_report(store, run)
    finally:
        store.close()
    click.echo(printable(render_text(rep), multiline=True), nl=False)
    for path, writer, what in (
        (json_path, write_json, "JSON"),
        (csv_path, write_csv, "CSV"),
        (html_path, write_html, "HTML"),
    ):
        if path:
            click.echo(f"{what}: {writer(rep, path)}")
