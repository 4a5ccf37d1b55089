"""``bringup diagnose LOGFILE``: why did this engine fail, and what to try."""

from __future__ import annotations

import json
from typing import TextIO

import click

from bringup.diagnose import classify
from bringup.engines.registry import engines
from bringup.textsafe import printable


def _engine(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or value.strip().lower() in engines():
        return value
    names = ", ".join(sorted({a.name for a in engines().values()}))
    raise click.BadParameter(f"{value!r} is not an engine bringup knows; use one of: {names}.")


@click.command("diagnose")
@click.argument("logfile", type=click.File("r", encoding="utf-8", errors="replace"))
@click.option(
    "--engine",
    default=None,
    callback=_engine,
    help="Engine that wrote the log (its rules weigh in); any name or alias of a registered one.",
)
@click.option(
    "--exit-code",
    type=int,
    default=None,
    help="Exit status of the engine (negative: killed by that signal).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {category, evidence, remedy, confidence} as JSON.",
)
def diagnose(logfile: TextIO, engine: str | None, exit_code: int | None, as_json: bool) -> None:
    """Classify the failure in LOGFILE ('-' reads stdin)."""
    result = classify(logfile.read(), engine=engine, exit_code=exit_code)
    click.echo(
        json.dumps(result.to_dict()) if as_json else printable(result.explain(), multiline=True)
    )
