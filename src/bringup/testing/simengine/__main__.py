"""``python -m bringup.testing.simengine --world FILE [engine flags...]``.

Accepts the imitated engine's command line: ``--host``/``--port``, its model flag
(SGLang ``--model-path``/``--model``; vLLM ``serve MODEL`` or ``--model``; llama.cpp
``-m``/``--model``; trtllm-serve ``MODEL``), the served name (``--served-model-name``,
llama.cpp ``--alias``) and the searched flags. Flags the world does not know are rejected
the way the engine rejects them (or ignored, as the world says). ``--world`` may also come
from ``BRINGUP_SIM_WORLD`` and ``--sim-speed`` (start-up and crash delays are divided by
it) from ``BRINGUP_SIM_SPEED``, so the executable can stand in for an engine binary.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

from bringup.errors import BringupError
from bringup.testing.simengine.evaluate import unknown_flag_error
from bringup.testing.simengine.profile import profile_for
from bringup.testing.simengine.server import SimEngine
from bringup.testing.simengine.world import World, load_world

_NAME_FLAGS = ("--served-model-name", "--alias", "-a")


def _is_value(token: str) -> bool:
    return not token.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", token) is not None


def parse_argv(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Engine argv into ``{flag: value}`` (a bare switch is ``True``) and leading positionals."""
    flags: dict[str, Any] = {}
    positionals: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if _is_value(tok):
            positionals.append(tok)
            i += 1
            continue
        if "=" in tok and tok.startswith("--"):
            key, value = tok.split("=", 1)
            flags[key] = value
            i += 1
        elif i + 1 < len(argv) and _is_value(argv[i + 1]):
            flags[tok] = argv[i + 1]
            i += 2
        else:
            flags[tok] = True
            i += 1
    return flags, positionals


def _take(flags: dict[str, Any], names: tuple[str, ...]) -> Any:
    found = None
    for name in names:
        if name in flags:
            found = flags.pop(name)
    return found


def _launched() -> float | None:
    """When this process started (wall clock), to the clock tick. Read from its age in
    /proc: psutil's create_time adds the boot time, which the kernel gives to the whole
    second, so a start-up timed from it could be up to a second short. None off Linux."""
    try:
        after_name = Path("/proc/self/stat").read_text(encoding="ascii").rsplit(")", 1)[1]
        started_s = int(after_name.split()[19]) / os.sysconf("SC_CLK_TCK")  # field 22
        uptime_s = float(Path("/proc/uptime").read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return time.time() - max(0.0, uptime_s - started_s)


def build(argv: list[str]) -> tuple[World, SimEngine] | int:
    flags, positionals = parse_argv(argv)
    world_path = flags.pop("--world", None) or os.environ.get("BRINGUP_SIM_WORLD")
    speed = float(flags.pop("--sim-speed", None) or os.environ.get("BRINGUP_SIM_SPEED", "1"))
    if not world_path or world_path is True:
        print("simengine: --world FILE (or BRINGUP_SIM_WORLD) is required", file=sys.stderr)
        return 2
    try:
        world = load_world(str(world_path))
    except BringupError as exc:
        print(f"simengine: {exc}", file=sys.stderr)
        return 2
    profile = profile_for(world.world.engine)
    host = str(flags.pop("--host", "127.0.0.1"))
    port = int(flags.pop("--port", profile.default_port))
    rest = [p for p in positionals if p != "serve"]
    model = _take(flags, profile.model_flags) or (rest[0] if rest else None)
    served = _take(flags, _NAME_FLAGS)
    if profile.model_required and model is None:
        print(profile.model_required, file=sys.stderr)
        return 2
    rejected = unknown_flag_error(world, flags)
    if rejected is not None:
        text, code = rejected
        print(text, file=sys.stderr, flush=True)
        return code
    if world.flags.unknown == "ignore":
        flags = {k: v for k, v in flags.items() if world.accepts(k)}
    name = str(served or model or world.world.model)
    return world, SimEngine(world, flags, host, port, name, speed, _launched())


async def _serve(engine: SimEngine) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(engine.run())
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        return 0
    finally:
        await engine.close()


def main(argv: list[str] | None = None) -> int:
    built = build(list(sys.argv[1:] if argv is None else argv))
    if isinstance(built, int):
        return built
    _world, engine = built
    return asyncio.run(_serve(engine))


if __name__ == "__main__":
    sys.exit(main())
