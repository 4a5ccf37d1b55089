"""API keys come from an environment variable the user names, never from the command line."""

from __future__ import annotations

import os

import click

from bringup.errors import BringupError

api_key_env_option = click.option(
    "--api-key-env",
    default=None,
    metavar="NAME",
    help="Environment variable holding the server's API key (never printed or stored).",
)


def api_key_from_env(name: str | None) -> str | None:
    """The value of ``name``; a named but unset variable is a mistake to report."""
    if not name:
        return None
    value = os.environ.get(name)
    if not value:
        raise BringupError(
            f"environment variable {name} is not set; export it or drop --api-key-env."
        )
    return value
