"""How the simulated engine imitates one engine: its log style, health semantics and CLI.

Each engine folder may ship a :class:`SimProfile` (its adapter's ``sim_profile``); the
simulated engine looks the world's engine up in the registry and behaves as the profile
says. :data:`GENERIC` is a server that names no engine (the ``command`` engine's worlds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class SimProfile:
    log_format: str = "{line}"  # how each log line looks; {stamp} is the wall time
    # when the port opens: at start, at the world's listen_s (else 90% of start-up), or ready
    listen: Literal["start", "listen_s", "ready"] = "ready"
    ready_lines: tuple[str, ...] = ("Uvicorn running on {url}",)  # {url}: http://host:port
    loading_body: dict[str, Any] | None = None  # JSON of the 503 while loading (None: empty)
    ready_body: dict[str, Any] | None = None  # JSON of /health once ready (None: empty 200)
    model_flags: tuple[str, ...] = ("--model",)  # else the first positional argument
    model_required: str | None = None  # the engine's refusal when no model is given
    default_port: int = 8000
    # the engine's refusal of an unknown flag; {flag} is the flag
    reject: str = "usage: engine [-h] ...\nengine: error: unrecognized arguments: {flag}"
    reject_exit: int = 2


GENERIC = SimProfile(model_flags=("--model", "--model-path", "-m"))


def profile_for(engine: str) -> SimProfile:
    """The profile of the world's engine ("generic": a server that names none)."""
    if engine == "generic":
        return GENERIC
    from bringup.engines.registry import find_engine

    adapter = find_engine(engine)
    if adapter is None or adapter.sim_profile is None:
        raise KeyError(engine)
    return adapter.sim_profile


def imitates(engine: str) -> bool:
    """Whether the simulated engine can imitate ``engine``. "generic" is answered without
    the engine registry: loading every adapter (and compiling its diagnosis rules) would be
    most of a generic simulated engine's start-up CPU."""
    return engine == "generic" or engine in simulated_engines()


def simulated_engines() -> list[str]:
    """Engine names the simulated engine can imitate."""
    from bringup.engines.registry import adapters

    return ["generic", *(a.name for a in adapters() if a.sim_profile is not None)]
