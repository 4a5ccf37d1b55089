"""A package namespace whose names load from their modules on first use (PEP 562).

A package ``__init__`` that re-exports names from its modules would import every module
with the first one: an engine adapter reading its logs would load the whole classifier,
the checks and the HTTP client. With ``__getattr__ = exports(__name__, {name: module})``
each name is imported when it is first read (and then kept in the package); type checkers
see the same names through imports under ``TYPE_CHECKING``.

A name may be spelled like the module that defines it (``simengine.evaluate``, the function,
in ``simengine/evaluate.py``). The import system binds every newly loaded submodule on its
package, so the first ``import ...simengine.evaluate`` anywhere would make the package's
``evaluate`` the module from then on. The package's module object therefore becomes a
:class:`_Package`, which keeps an exported name bound to the exported object when its
submodule of the same name is bound, as an eager ``from .evaluate import evaluate`` did.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any


class _Package(types.ModuleType):
    """A package module whose exported names win over its submodules of the same name."""

    _lazy_homes: Mapping[str, str]

    def __setattr__(self, name: str, value: Any) -> None:
        homes = self.__dict__.get("_lazy_homes", {})
        if isinstance(value, types.ModuleType) and homes.get(name) == value.__name__:
            value = getattr(value, name)  # the submodule's own export, not the submodule
        super().__setattr__(name, value)


def exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: ``homes`` maps each name to the module defining it."""
    module = sys.modules[package]
    module.__dict__["_lazy_homes"] = dict(homes)
    module.__class__ = _Package

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
