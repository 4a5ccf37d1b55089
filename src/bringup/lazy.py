"""A package namespace whose names load from their modules on first use (PEP 562).

A package ``__init__`` that re-exports names from its modules would import every module
with the first one: an engine adapter reading its logs would load the whole classifier,
the checks and the HTTP client. With ``__getattr__ = exports(__name__, {name: module})``
each name is imported when it is first read (and then kept in the package); type checkers
see the same names through imports under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: ``homes`` maps each name to the module defining it."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
