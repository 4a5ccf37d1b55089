"""``bringup probe URL``: is this running server answering right? Exit 0 yes, 1 no.

Exit 4: not answered within ``--timeout`` while the server's process kept computing
(``slow``: a loaded machine or a long queue, not a hang; see :mod:`bringup.checks.probe`).

With ``--reference RUN`` it also compares the server's answers with the reference answers
that run stored (drift, not only a known fact)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from bringup.checks.drift_probe import run_reference_probe, stored_reference
from bringup.checks.probe import SLOW_EXIT, run_probe
from bringup.cli.secrets_env import api_key_env_option, api_key_from_env
from bringup.errors import BringupError
from bringup.store import Store
from bringup.textsafe import printable


@click.command("probe")
@click.argument("url")
@click.option(
    "--timeout",
    "timeout_s",
    default=None,
    type=float,
    help="Seconds for the whole probe [default: 10; 120 with --reference].",
)
@click.option(
    "--reference",
    "reference_run",
    default=None,
    metavar="RUN",
    help="Also compare the answers with the reference answers stored for this run.",
)
@click.option(
    "--prompts",
    default=None,
    type=click.IntRange(min=1),
    help="With --reference: compare only the first N reference prompts (faster).",
)
@click.option("--db", default="bringup.db", show_default=True, help="The results database.")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@api_key_env_option
@click.option("--health-path", default="/health", show_default=True, help="Health endpoint.")
@click.option("--model", default=None, help="Model name to send (servers with several).")
def probe(
    url: str,
    timeout_s: float | None,
    reference_run: str | None,
    prompts: int | None,
    db: str,
    as_json: bool,
    api_key_env: str | None,
    health_path: str,
    model: str | None,
) -> None:
    """Health, one short known answer and the garbage detectors against URL."""
    api_key = api_key_from_env(api_key_env)
    extra: dict[str, Any] = {}
    if reference_run is None:
        result = asyncio.run(
            run_probe(
                url,
                timeout_s=timeout_s or 10.0,
                api_key=api_key,
                health_path=health_path,
                model=model,
            )
        )
    else:
        if not Path(db).is_file():
            raise BringupError(f"the results database {db} does not exist; pass --db.")
        reference, spec, run_id = stored_reference(Store(db), reference_run)
        result, extra = asyncio.run(
            run_reference_probe(
                url,
                reference,
                spec,
                timeout_s=timeout_s or 120.0,
                prompts=prompts,
                api_key=api_key,
                health_path=health_path,
                model=model,
            )
        )
        extra["reference_run"] = run_id
    # JSON escapes control characters itself; the verdict quotes what the server said
    shown = json.dumps(result.to_dict() | extra, indent=2) if as_json else printable(result.verdict)
    click.echo(shown)
    sys.exit(0 if result.passed else SLOW_EXIT if result.slow_s is not None else 1)
