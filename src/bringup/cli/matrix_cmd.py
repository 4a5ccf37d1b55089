"""``bringup matrix``: the compatibility matrix accumulated in the results database."""

from __future__ import annotations

from pathlib import Path

import click

from bringup.errors import BringupError
from bringup.plan.matrix import DEPENDS, NOT_TRIED, RULE, WORKS, compatibility_matrix
from bringup.textsafe import printable


@click.command("matrix")
@click.option("--db", default="bringup.db", show_default=True, help="SQLite results file.")
@click.option("--flag", "flags", multiple=True, help="Only these flags (repeatable).")
@click.option(
    "--rules", "with_rules", is_flag=True, help="Name the diagnosis rule that decided each failure."
)
@click.option(
    "--export",
    "export_to",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write every decided verdict, with its fingerprint, to FILE (for `sweep --import`).",
)
def matrix(db: str, flags: tuple[str, ...], with_rules: bool, export_to: str | None) -> None:
    """Flag value by fingerprint (hardware, engine version): works, depends (with the other
    values each outcome came with), a failure category or not tried, with counts."""
    from bringup.store import Store
    from bringup.store.exchange import export_verdicts

    if not Path(db).is_file():
        raise BringupError(f"no results database at {db}; run `bringup sweep` first or pass --db.")
    store = Store(db)
    try:
        if export_to is not None:
            n = export_verdicts(store, Path(export_to))
            click.echo(printable(f"exported {n} decided verdicts to {export_to}"))
            return
        result = compatibility_matrix(store.iter_all_trials())
    finally:
        store.close()
    raw = result.table(rules=with_rules)
    if flags:
        raw = [raw[0], *(r for r in raw[1:] if r[0] in flags)]
    if len(raw) == 1:
        click.echo("no decided trials recorded yet.")
        return
    colour = {WORKS: "green", DEPENDS: "yellow", NOT_TRIED: None}
    table = [[printable(cell) for cell in row] for row in raw]  # stored flag values
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for i, row in enumerate(table):
        parts = []
        for j, (text, width) in enumerate(zip(row, widths, strict=True)):
            cell = text.ljust(width)
            if i and j >= 2:
                word = result.verdict(raw[i][0], raw[i][1], result.columns[j - 2])
                fg = colour.get(word, "red")  # anything else is a failure category
                cell = click.style(cell, fg=fg) if fg else cell
            parts.append(cell)
        click.echo("  ".join(parts).rstrip())
    click.echo(f"cells: {RULE}")
