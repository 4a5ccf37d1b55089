"""``bringup recheck [RUN]``: re-verify a stored winner after an engine/driver/model change.

Prints what changed in the fingerprint, the winner's (and the reference's) figures against
the stored ones with their noise bands, and exits 1 on a regression beyond the noise.
"""

from __future__ import annotations

import asyncio
import sys

import click

from bringup.cli.report_cmd import open_store
from bringup.recheck import recheck as run_recheck


@click.command("recheck")
@click.argument("run_id", required=False)
@click.option("--db", default="bringup.db", show_default=True, help="SQLite results file.")
@click.option("--runs-dir", default="runs", show_default=True, help="Folder for the re-run's logs.")
def recheck(run_id: str | None, db: str, runs_dir: str) -> None:
    """Re-run RUN's winner and reference (default: the latest run); exit 1 on a regression."""
    store = open_store(db)
    try:
        report = asyncio.run(run_recheck(store, run_id, runs_dir))
    finally:
        store.close()
    click.echo(f"recheck of run {report.run_id}")
    if report.fingerprint_changes:
        click.echo("fingerprint changed:")
        for line in report.fingerprint_changes:
            click.echo(f"  {line}")
    else:
        click.echo("fingerprint unchanged")
    for label, figures in (("winner", report.figures), ("reference", report.reference_figures)):
        if figures:
            click.echo(f"{label}:")
            for f in figures:
                click.echo(f"  {f.line()}")
    for line in report.problems:
        click.echo(f"  {line}")
    if report.regressed:
        click.echo("bringup: regression beyond the noise; see above.", err=True)
        sys.exit(1)
    click.echo("no regression beyond the noise")
