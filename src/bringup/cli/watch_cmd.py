"""``bringup watch URL``: probe a deployed server with real generation until it fails N times.

Each verdict is logged as one line. After N consecutive failures: run ``--on-failure``
(argv-split, no shell) and keep watching, or, without it, exit 1. A slow probe (the server
kept computing but answered too late) never trips it; a watch whose last probe was slow
exits 4, as ``bringup probe`` does.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import time

import click

from bringup.checks.probe import SLOW_EXIT
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
@click.option(
    "--recheck-every",
    "recheck_every_s",
    default=None,
    type=click.FloatRange(min=60),
    help="Seconds between rechecks of the stored winner (bringup recheck); a regression trips.",
)
@click.option("--db", default="bringup.db", show_default=True, help="Results file for rechecks.")
@click.option("--run", "run_id", default=None, help="Run to recheck (default: the latest).")
@click.option("--runs-dir", default="runs", show_default=True, help="Folder for recheck logs.")
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
    recheck_every_s: float | None,
    db: str,
    run_id: str | None,
    runs_dir: str,
) -> None:
    """Probe URL with a real generation every --interval seconds; log each verdict."""
    api_key = api_key_from_env(api_key_env)
    argv = shlex.split(on_failure) if on_failure else None
    options = WatchOptions(interval_s, failures, timeout_s, api_key, health_path, model, count)
    options.recheck_every_s = recheck_every_s
    recheck = None
    if recheck_every_s is not None:
        from bringup.cli.report_cmd import open_store
        from bringup.recheck import recheck as run_recheck

        open_store(db).close()  # a missing results file is a mistake to name now, not later

        async def recheck() -> tuple[str, bool]:
            store = open_store(db)
            try:
                report = await run_recheck(store, run_id, runs_dir)
            finally:
                store.close()
            worst = [f.line() for f in report.figures if f.regressed] + report.problems
            line = "; ".join(worst) if worst else "no regression beyond the noise"
            click.echo(f"recheck of run {report.run_id}: {line}")
            return line, report.regressed

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

    outcome = asyncio.run(watch_server(url, options, on_verdict=log, on_trip=trip, recheck=recheck))
    if outcome.rechecks and outcome.rechecks[-1][2]:
        click.echo(f"bringup: the recheck found a regression: {outcome.rechecks[-1][1]}", err=True)
        sys.exit(1)
    if outcome.tripped:
        click.echo(f"bringup: {failures} consecutive failed probes of {url}.", err=True)
        sys.exit(1)
    last = outcome.last
    if last is None or last.passed:
        sys.exit(0)
    sys.exit(SLOW_EXIT if last.slow_s is not None else 1)
