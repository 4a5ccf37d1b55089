"""``bringup sweep``, ``bringup launch`` and ``bringup demo``."""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path

import click
from rich.console import Console
from rich.live import Live
from rich.text import Text

from bringup.cli.jsonout import dumps, launch_json, sweep_json
from bringup.cli.render import ProgressLine, print_live_server, print_outcome
from bringup.cli.secrets_env import api_key_env_option, api_key_from_env
from bringup.errors import BringupError, TrialFailedError
from bringup.executors.local import check_local_concurrency
from bringup.files import redact_file
from bringup.secrets import secret_values
from bringup.spec import Spec, load_spec, parse_set, parse_spec
from bringup.store import Store, launched
from bringup.store.exchange import import_verdicts
from bringup.sweep import SweepOptions, launch_one, prepare, run_sweep
from bringup.textsafe import printable
from bringup.verdict import Status

db_option = click.option(
    "--db", default="bringup.db", show_default=True, help="SQLite results file."
)
runs_option = click.option(
    "--runs-dir", default="runs", show_default=True, help="Folder for per-trial logs."
)
json_option = click.option(
    "--json",
    "json_out",
    is_flag=True,
    help="Print the outcome as one JSON line on stdout; progress goes to stderr.",
)


def _sweep(
    spec: Spec,
    db: str,
    runs_dir: str,
    rerun: bool,
    adopt: bool,
    planner: str | None,
    max_trials: int | None,
    api_key_env: str | None,
    executor: str | None = None,
    address: str | None = None,
    max_in_flight: int | None = None,
    json_out: bool = False,
    imports: tuple[str, ...] = (),
) -> None:
    console = Console(stderr=json_out)  # with --json, stdout holds the JSON object only
    if (executor or spec.plan.executor) == "local":
        check_local_concurrency(spec, max_in_flight)  # before anything is recorded
    prep = prepare(spec)
    store = Store(db)
    for path in imports:
        got = import_verdicts(store, Path(path))
        console.print(
            Text(printable(f"imported {got.added} verdicts from {path} ({got.known} known here)"))
        )
    options = SweepOptions(
        runs_dir=runs_dir,
        rerun=rerun,
        adopt=adopt,
        planner=planner,
        max_trials=max_trials,
        api_key=api_key_from_env(api_key_env),
        executor=executor,
        address=address,
        max_in_flight=max_in_flight,
    )
    console.print(
        Text.assemble(
            ("bringup", "bold"),
            printable(f" {spec.engine.name} {prep.engine_version} · model {spec.model.path}"),
            f"\nspace: {len(spec.configs())} configurations · results in {printable(db)}",
        )
    )
    line = ProgressLine(spec, keep=12 if console.is_terminal else None)
    with Live(line, console=console, refresh_per_second=4, transient=False):
        outcome = asyncio.run(run_sweep(prep, store, options, line.update))
    if not console.is_terminal:
        console.line()  # a file or pipe gets Live's last frame without its line end
    print_outcome(console, outcome, spec)
    console.print(Text(f"logs: {printable(outcome.run_dir)}"))
    if json_out:
        click.echo(dumps(sweep_json(outcome)))
    if outcome.winner is None:
        raise SystemExit(1)


@click.command()
@click.argument("spec_path", type=click.Path(dir_okay=False))
@db_option
@runs_option
@click.option("--rerun", is_flag=True, help="Relaunch configurations already decided in the store.")
@click.option(
    "--adopt",
    is_flag=True,
    help="Reuse a server already on a pinned port if it serves the same model.",
)
@click.option("--planner", default=None, help="grid | default (overrides plan.planner).")
@click.option(
    "--max-trials", type=click.IntRange(min=1), default=None, help="Stop after this many trials."
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default=None,
    help="Where trials run: here, or as Ray tasks (overrides plan.executor).",
)
@click.option("--address", default=None, help="The Ray cluster (default: RAY_ADDRESS).")
@click.option(
    "--max-in-flight",
    type=click.IntRange(min=1),
    default=None,
    help="Trials at once (default: here 1, on Ray as many as the cluster's resources fit).",
)
@click.option(
    "--import",
    "imports",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Verdicts from `matrix --export` to reuse where the fingerprint matches (repeatable).",
)
@api_key_env_option
@json_option
def sweep(
    spec_path: str,
    db: str,
    runs_dir: str,
    rerun: bool,
    adopt: bool,
    planner: str | None,
    max_trials: int | None,
    executor: str | None,
    address: str | None,
    max_in_flight: int | None,
    imports: tuple[str, ...],
    api_key_env: str | None,
    json_out: bool,
) -> None:
    """Run every planned trial of SPEC_PATH and pick the fastest correct configuration."""
    _sweep(
        load_spec(spec_path),
        db,
        runs_dir,
        rerun,
        adopt,
        planner,
        max_trials,
        api_key_env,
        executor,
        address,
        max_in_flight,
        json_out,
        imports,
    )


@click.command()
@click.argument("spec_path", type=click.Path(dir_okay=False))
@click.option(
    "--set", "sets", multiple=True, metavar="FLAG=VALUE", help="One flag of the trial; repeatable."
)
@db_option
@runs_option
@click.option(
    "--adopt",
    is_flag=True,
    help="Reuse a server already on the pinned port if it serves the same model.",
)
@click.option(
    "--keep-failed",
    is_flag=True,
    help="Keep a failed trial's server up for inspection (until Ctrl-C); still exits 1.",
)
@api_key_env_option
@json_option
def launch(
    spec_path: str,
    sets: tuple[str, ...],
    db: str,
    runs_dir: str,
    adopt: bool,
    keep_failed: bool,
    api_key_env: str | None,
    json_out: bool,
) -> None:
    """Run one trial through readiness and checks, then keep the server up until Ctrl-C."""
    console = Console(stderr=json_out)  # with --json, stdout holds the JSON line only
    spec = load_spec(spec_path)
    prep = prepare(spec)
    store = Store(db)
    options = SweepOptions(
        runs_dir=runs_dir,
        adopt=adopt,
        api_key=api_key_from_env(api_key_env),
        keep_failed=keep_failed,
    )
    config = parse_set(list(sets))

    async def main() -> None:
        line = ProgressLine(spec)
        with Live(line, console=console, refresh_per_second=4):
            result, server = await launch_one(prep, store, config, options, line.update)
        if not console.is_terminal:
            console.line()  # a file or pipe gets Live's last frame without its line end
        why = result.failure.headline() if result.failure else result.status.value
        failed = f"the trial did not pass ({why}); see {result.log_path}."
        if server is None:
            raise TrialFailedError(failed)
        if result.status is not Status.PASSED:
            console.print(Text(printable(f"{failed} Kept up for inspection."), "bold red"))
        print_live_server(console, result, server.url, server.pid)
        if json_out:
            click.echo(dumps(launch_json(result, server.url, server.pid)))
        console.print("serving; press Ctrl-C to stop")
        try:
            while server.process is None or server.process.poll() is None:
                await asyncio.sleep(0.5)
            if result.status is not Status.PASSED:
                raise TrialFailedError(failed)
            raise BringupError(f"the server exited on its own; see {result.log_path}.")
        finally:
            if server.process is not None:
                server.process.stop(spec.launch.stop_grace_s)
                launched.forget(store, server.process.pid)
                proc = server.process
                hidden = spec.secret_values() + secret_values(proc.argv, proc.env)
                redact_file(proc.log_path, hidden)  # the kept log holds no secret

    asyncio.run(main())


def demo_spec() -> Spec:
    text = resources.files("bringup.data").joinpath("demo.toml").read_text(encoding="utf-8")
    return parse_spec(text, source="bringup/data/demo.toml")


@click.command()
@db_option
@runs_option
@click.option("--rerun", is_flag=True, help="Relaunch configurations already decided in the store.")
@click.option("--show-spec", is_flag=True, help="Print the bundled spec and exit.")
def demo(db: str, runs_dir: str, rerun: bool, show_spec: bool) -> None:
    """Sweep the bundled spec: real llama-server flags on this CPU with Gemma 3 270M."""
    if show_spec:
        click.echo(
            resources.files("bringup.data").joinpath("demo.toml").read_text(encoding="utf-8")
        )
        return
    Path(runs_dir).mkdir(parents=True, exist_ok=True)
    _sweep(demo_spec(), db, runs_dir, rerun, False, None, None, None)
