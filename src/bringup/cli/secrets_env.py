"""API keys come from an environment variable the user names, never from the command line."""

from __future__ import annotations

import os

from bringup.errors import BringupError


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
