"""The ``bringup`` command: a thin shell over the library.

This is the only place where errors become exit codes: a :class:`BringupError` prints its
one sentence and exits non-zero, a :class:`RequestError` (the server failed) exits 1;
Ctrl-C, SIGTERM and SIGHUP stop every engine bringup started and exit 130.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from typing import Any, NoReturn

import click

from bringup import __version__
from bringup.errors import BringupError, RequestError
from bringup.textsafe import printable

# Commands living in their own modules: (module, attribute).
COMMANDS: list[tuple[str, str]] = [
    ("bringup.cli.sweep_cmd", "sweep"),
    ("bringup.cli.sweep_cmd", "launch"),
    ("bringup.cli.sweep_cmd", "demo"),
    ("bringup.cli.diagnose_cmd", "diagnose"),
    ("bringup.cli.bench_cmd", "bench"),
    ("bringup.cli.probe_cmd", "probe"),
    ("bringup.cli.matrix_cmd", "matrix"),
    ("bringup.cli.report_cmd", "report"),
    ("bringup.cli.deploy_cmd", "deploy"),
    ("bringup.cli.watch_cmd", "watch"),
    ("bringup.cli.profile_cmd", "profile"),
    ("bringup.cli.recheck_cmd", "recheck"),
]


class BringupGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BringupError as exc:
            click.echo(printable(f"bringup: {exc}"), err=True)
            sys.exit(exc.exit_code)
        except RequestError as exc:  # the server under test failed a request
            click.echo(printable(f"bringup: the server failed: {exc}"), err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            from bringup.server.process import stop_all

            stop_all()
            with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
                click.echo(
                    "bringup: interrupted; engines stopped. Re-run the same command to resume.",
                    err=True,
                )
            sys.exit(130)


@click.group(cls=BringupGroup)
@click.version_option(__version__, prog_name="bringup")
def cli() -> None:
    """Find, prove and ship the fastest serving configuration that actually works."""


def _register() -> None:
    for module, attr in COMMANDS:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        cmd = getattr(mod, attr, None)
        if isinstance(cmd, click.Command):
            cli.add_command(cmd, attr)


def _sigterm(signum: int, frame: object) -> NoReturn:
    raise KeyboardInterrupt


def _sighup(signum: int, frame: object) -> NoReturn:
    """A closed terminal or a dropped SSH session: stop like SIGTERM, with cleanup.

    Output to the vanished terminal would fail with EIO in the middle of that cleanup,
    so what went to a terminal goes to /dev/null from here on.
    """
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            if os.isatty(fd):
                os.dup2(null, fd)
    raise KeyboardInterrupt


_register()


def main() -> None:
    signal.signal(signal.SIGTERM, _sigterm)
    signal.signal(signal.SIGHUP, _sighup)
    cli()
