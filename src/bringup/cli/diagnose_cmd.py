"""``bringup diagnose LOGFILE``: why did this engine fail, and what to try."""

from __future__ import annotations

import json
from typing import TextIO

import click

from bringup.diagnose import classify
from bringup.textsafe import printable

ENGINES = ["sglang", "vllm", "llama.cpp", "tensorrt-llm", "trtllm", "ollama", "command"]


@click.command("diagnose")
@click.argument("logfile", type=click.File("r", encoding="utf-8", errors="replace"))
@click.option(
    "--engine",
    type=click.Choice(ENGINES, case_sensitive=False),
    default=None,
    help="Engine that wrote the log (its rules weigh in).",
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
