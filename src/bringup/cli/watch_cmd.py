"""``bringup watch URL``: probe a deployed server with real generation until it fails N times.

Each verdict is logged as one line. After N consecutive failures: run ``--on-failure``
(argv-split, no shell) and keep watching, or, without it, exit 1.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import time

import click

from bringup.cli.secrets_env import api_key_env_option, api_key_from_env
from bringup.textsafe import printable
from bringup.watch import WatchEvent, WatchOptions, run_command, watch_server


@click.command("watch")
@click.argument("url")
@click.option(
    "--interval",
    "interval_s",
    default=30.0,
    show_default=True,
    type=float,
    help="Seconds between probes.",
)
@click.option(
    "--failures",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Consecutive failures that trip it.",
)
@click.option(
    "--on-failure",
    default=None,
    metavar="CMD",
    help="Command to run when tripped (split like a shell, run without one); then keep watching.",
)
@click.option(
    "--timeout",
    "timeout_s",
    default=10.0,
    show_default=True,
    type=float,
    help="Seconds for one probe.",
)
@click.option(
    "--count", default=None, type=click.IntRange(min=1), help="Stop after this many probes."
)
@api_key_env_option
@click.option("--health-path", default="/health", show_default=True, help="Health endpoint.")
@click.option("--model", default=None, help="Model name to send.")
def watch(
    url: str,
    interval_s: float,
    failures: int,
    on_failure: str | None,
    timeout_s: float,
    count: int | None,
    api_key_env: str | None,
    health_path: str,
    model: str | None,
) -> None:
    """Probe URL with a real generation every --interval seconds; log each verdict."""
    api_key = api_key_from_env(api_key_env)
    argv = shlex.split(on_failure) if on_failure else None
    options = WatchOptions(interval_s, failures, timeout_s, api_key, health_path, model, count)

    def log(e: WatchEvent) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(e.at))
        streak = f" [{e.consecutive_failures}/{failures}]" if e.consecutive_failures else ""
        click.echo(printable(f"{stamp} {url} {e.result.verdict}{streak}"))

    def trip(e: WatchEvent) -> bool:
        if argv is None:
            return False
        click.echo(f"{failures} consecutive failures: running {shlex.join(argv)}")
        click.echo(f"on-failure command exited {run_command(argv)}")
        return True

    outcome = asyncio.run(watch_server(url, options, on_verdict=log, on_trip=trip))
    if outcome.tripped:
        click.echo(f"bringup: {failures} consecutive failed probes of {url}.", err=True)
        sys.exit(1)
    sys.exit(0 if outcome.last is None or outcome.last.passed else 1)
