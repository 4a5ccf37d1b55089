"""Engine adapters as plugins.

One hook, ``register_engines(register)``, like simonw/llm. Built-in adapters register
through it exactly as third-party packages do via the ``bringup.engines`` entry point.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

from bringup.engines.base import EngineAdapter
from bringup.errors import UnknownEngineError

hookspec = pluggy.HookspecMarker("bringup")
hookimpl = pluggy.HookimplMarker("bringup")

BUILTIN_MODULES = (
    "bringup.engines.llamacpp",
    "bringup.engines.sglang",
    "bringup.engines.vllm",
    "bringup.engines.trtllm",
    "bringup.engines.command",
)


class EngineHooks:
    @hookspec
    def register_engines(self, register: Callable[[EngineAdapter], None]) -> None:
        """Call ``register(adapter)`` for each engine adapter this plugin provides."""


_manager: pluggy.PluginManager | None = None


def plugin_manager() -> pluggy.PluginManager:
    global _manager
    if _manager is None:
        import importlib

        pm = pluggy.PluginManager("bringup")
        pm.add_hookspecs(EngineHooks)
        for modname in BUILTIN_MODULES:
            try:
                mod = importlib.import_module(modname)
            except ModuleNotFoundError as exc:
                if exc.name != modname:
                    raise
                continue
            pm.register(mod, name=modname)
        pm.load_setuptools_entrypoints("bringup.engines")
        _manager = pm
    return _manager


def engines() -> dict[str, EngineAdapter]:
    found: dict[str, EngineAdapter] = {}

    def register(adapter: EngineAdapter) -> None:
        for key in (adapter.name, *adapter.aliases):
            found[key.lower()] = adapter

    plugin_manager().hook.register_engines(register=register)
    return found


def get_engine(name: str) -> EngineAdapter:
    table = engines()
    try:
        return table[name.lower()]
    except KeyError:
        names = sorted({a.name for a in table.values()})
        raise UnknownEngineError(
            f"unknown engine {name!r}; set engine.name to one of: {', '.join(names)}."
        ) from None
