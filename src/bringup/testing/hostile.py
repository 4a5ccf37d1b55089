"""A fast, healthy engine for hostile-input tests: the simulated engine behind ``command``.

``sim_spec(folder, space=..., launch_args=..., extra=...)`` writes a world (every flag
accepted, start-up in about a third of a second) and a spec that runs it through the
generic ``command`` engine, so a whole ``bringup sweep`` of a few trials takes seconds
and passes. Tests and ``bench/hostile_inputs.py`` add the hostile part: flag values, env,
names, or a kill at the right moment.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

WORLD = """
[world]
name = "hostile"
engine = "generic"
engine_version = "1.0"
model = "sim-model"

[timing]
startup_s = 30.0
check_s = 1.0
bench_s = 1.0
teardown_s = 1.0
start_timeout_s = 60.0

[flags]
unknown = "ignore"

[performance]
output_tok_s = 400.0
ttft_p50_ms = 10.0
noise = 0.0

"""
SPEED = 100.0  # start-up 30 s / 100: a third of a second


def _toml(value: Any) -> str:
    return json.dumps(value)  # JSON strings and lists are valid TOML values


def sim_spec(
    folder: Path,
    *,
    space: dict[str, list[Any]] | None = None,
    launch_args: list[str] | None = None,
    env: dict[str, str] | None = None,
    extra: str = "",
    startup_s: float | None = None,
    bench: dict[str, Any] | None = None,
) -> Path:
    """Write ``world.toml`` and ``spec.toml`` in ``folder``; return the spec's path."""
    world = (
        WORLD
        if startup_s is None
        else WORLD.replace("startup_s = 30.0", f"startup_s = {startup_s}")
    )
    command = [
        sys.executable,
        "-m",
        "bringup.testing.simengine",
        "--host",
        "{host}",
        "--port",
        "{port}",
    ]
    all_env = {"BRINGUP_SIM_WORLD": str(folder / "world.toml"), "BRINGUP_SIM_SPEED": str(SPEED)}
    all_env |= env or {}
    space = space or {"--max-batch": [1, 2]}
    world += "\n[space]\n" + "".join(f"{_toml(k)} = {_toml(v)}\n" for k, v in space.items())
    world += "[reference]\n" + "".join(f"{_toml(k)} = {_toml(v[0])}\n" for k, v in space.items())
    (folder / "world.toml").write_text(world, encoding="utf-8")
    lines = [
        "[engine]",
        'name = "command"',
        f"command = {_toml(command)}",
        "env = {" + ", ".join(f"{_toml(k)} = {_toml(v)}" for k, v in all_env.items()) + "}",
        "[model]",
        'path = "sim-model"',
        "[launch]",
        f"args = {_toml(launch_args or [])}",
        "start_timeout_s = 60",
        "hang_timeout_s = 60",
        "stop_grace_s = 5",
        "[space]",
        *(f"{_toml(k)} = {_toml(v)}" for k, v in space.items()),
        "[bench]",
        *(
            f"{k} = {_toml(v)}"
            for k, v in (
                {"concurrency": [1], "input_tokens": 16, "output_tokens": 8, "requests": 2}
                | {"warmup": 0}
                | (bench or {})
            ).items()
        ),
        "[checks]",
        "accuracy = false",
        extra,
    ]
    spec = folder / "spec.toml"
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return spec
