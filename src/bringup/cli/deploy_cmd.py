"""``bringup deploy [RUN|TRIAL] --to script|systemd|k8s|compose``: ship a proven trial."""

from __future__ import annotations

from typing import cast

import click

from bringup.cli.report_cmd import open_store
from bringup.deploy import (
    TARGETS,
    DeployOptions,
    Target,
    deployment_from,
    resolve_trial,
    write_deployment,
)


@click.command("deploy")
@click.argument("ref", metavar="[RUN|TRIAL]", required=False)
@click.option("--to", "target", type=click.Choice(TARGETS), required=True, help="What to write.")
@click.option("--out", "out_dir", default="deploy", show_default=True, help="Folder for the files.")
@click.option("--db", default="bringup.db", show_default=True, help="SQLite results file.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Serve on this port [default: the spec's [launch] port, else the engine's default].",
)
@click.option("--image", default=None, help="Engine image the container image is built on.")
@click.option(
    "--user",
    default=None,
    help="systemd: run as this existing user [default: a dynamic user where the model is "
    "readable by anyone, else the model's owner].",
)
def deploy(
    ref: str | None,
    target: str,
    out_dir: str,
    db: str,
    port: int | None,
    image: str | None,
    user: str | None,
) -> None:
    """Write the winner of the latest run (or of RUN, or the passed TRIAL) as a deployment."""
    store = open_store(db)
    try:
        run, trial = resolve_trial(store, ref)
    finally:
        store.close()
    dep = deployment_from(run, trial, port=port)
    options = DeployOptions(user=user, base_image=image)
    paths = write_deployment(dep, cast(Target, target), out_dir, options)
    click.echo(f"{dep.engine} trial {dep.trial_id} as {target}:")
    for p in paths:
        click.echo(f"  {p}")
    if dep.secret_env:
        click.echo(f"secrets to provide (never written): {', '.join(dep.secret_env)}")
    if target in ("k8s", "compose"):
        click.echo(
            "inside the container the server listens on 0.0.0.0 (the stored command bound "
            f"{dep.host}); build the image from the Dockerfile so the probes can run bringup:"
            f" first `pip wheel --no-deps -w {out_dir} /path/to/bringup` for its wheel."
        )
