"""Engine adapters as plugins.

One hook, ``register_engines(register)``, like simonw/llm. Built-in engines register
through it exactly as third-party packages do via the ``bringup.engines`` entry point; a
built-in is one folder under ``bringup/engines/`` plus its line in :data:`BUILTIN_MODULES`.
Every spelling of an engine (name and aliases) resolves here and nowhere else.
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
    "bringup.engines.llamacpp.ollama",
)


class EngineHooks:
    @hookspec
    def register_engines(self, register: Callable[[EngineAdapter], None]) -> None:
        """Call ``register(adapter)`` for each engine adapter this plugin provides."""


_manager: pluggy.PluginManager | None = None
_table: tuple[frozenset[int], dict[str, EngineAdapter], list[EngineAdapter]] | None = None


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
    """Every key (name and alias, lower-case) -> its adapter, in registration order.

    The table is built once per set of registered plugins: readiness asks it for every log
    line, and an adapter caches its compiled patterns.
    """
    return _built()[1]


def _built() -> tuple[frozenset[int], dict[str, EngineAdapter], list[EngineAdapter]]:
    global _table
    pm = plugin_manager()
    key = frozenset(id(p) for p in pm.get_plugins())
    if _table is not None and _table[0] == key:
        return _table
    found: dict[str, EngineAdapter] = {}
    calls: list[EngineAdapter] = []

    def register(adapter: EngineAdapter) -> None:
        calls.append(adapter)
        for name in (adapter.name, *adapter.aliases):
            found.setdefault(name.lower(), adapter)  # on a shared name a built-in wins

    # in registration order (a plain hook call would run the last registered plugin first)
    for impl in pm.hook.register_engines.get_hookimpls():
        impl.function(register=register)
    _table = (key, found, calls)
    return _table


def adapters() -> list[EngineAdapter]:
    """Each registered adapter once, in registration order (built-ins first)."""
    return list({id(a): a for a in _built()[2]}.values())


def find_engine(name: str | None) -> EngineAdapter | None:
    """The adapter any spelling of ``name`` refers to, or None when none is registered."""
    if not name:
        return None
    return engines().get(name.strip().lower())


def engine_key(name: str | None) -> str | None:
    """The canonical name of the engine ``name`` spells, or None when unknown."""
    adapter = find_engine(name)
    return adapter.name if adapter is not None else None


def get_engine(name: str) -> EngineAdapter:
    """The adapter that launches engine ``name``; raises UnknownEngineError otherwise."""
    adapter = find_engine(name)
    if adapter is None or not adapter.launchable:
        names = sorted({a.name for a in adapters() if a.launchable})
        raise UnknownEngineError(
            f"unknown engine {name!r}; set engine.name to one of: {', '.join(names)}."
        )
    return adapter
