"""``bringup probe URL``: is this running server answering right? Exit 0 yes, 1 no."""

from __future__ import annotations

import asyncio
import json
import sys

import click

from bringup.checks.probe import run_probe
from bringup.cli.secrets_env import api_key_env_option, api_key_from_env
from bringup.textsafe import printable


@click.command("probe")
@click.argument("url")
@click.option(
    "--timeout",
    "timeout_s",
    default=10.0,
    show_default=True,
    type=float,
    help="Seconds for the whole probe (health, one generation, detectors).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@api_key_env_option
@click.option("--health-path", default="/health", show_default=True, help="Health endpoint.")
@click.option("--model", default=None, help="Model name to send (servers with several).")
def probe(
    url: str,
    timeout_s: float,
    as_json: bool,
    api_key_env: str | None,
    health_path: str,
    model: str | None,
) -> None:
    """Health, one short known answer and the garbage detectors against URL."""
    api_key = api_key_from_env(api_key_env)
    result = asyncio.run(
        run_probe(url, timeout_s=timeout_s, api_key=api_key, health_path=health_path, model=model)
    )
    # JSON escapes control characters itself; the verdict quotes what the server said
    click.echo(json.dumps(result.to_dict(), indent=2) if as_json else printable(result.verdict))
    sys.exit(0 if result.passed else 1)
