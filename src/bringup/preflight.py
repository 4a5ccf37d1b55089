"""What must hold before any engine is launched; each failure is one sentence (exit 2).

:func:`preflight` runs in :func:`bringup.sweep.prepare`, after the engine was located:

- the engine's program is an executable file (not a directory, not a file without its
  execute bit), else every trial would end in a PermissionError;
- no single argument or environment value exceeds Linux's ``MAX_ARG_STRLEN`` (128 KiB)
  and the longest command line with the environment fits ``ARG_MAX``: beyond either,
  ``execve`` fails with E2BIG;
- the ``[bench]`` table makes a valid benchmark (checked by the benchmark's own config,
  which would otherwise refuse it only after the engine had started).
"""

from __future__ import annotations

import os
from pathlib import Path

from bringup.bench import BenchConfig
from bringup.errors import SpecError
from bringup.spec import Spec

MAX_ARG_STRLEN = 32 * 4096  # bytes per argument or "NAME=value", NUL included (Linux)


def _check_program(argv: list[str]) -> None:
    program = Path(argv[0])
    if not program.exists():
        return  # the adapter found it on PATH or reports it itself
    if program.is_dir():
        raise SpecError(f"the engine program {program} is a directory; name the executable.")
    if not os.access(program, os.X_OK):
        raise SpecError(
            f"the engine program {program} is not executable; run `chmod +x {program}` "
            "or set engine.binary to an executable."
        )


def _size(word: str) -> int:
    return len(os.fsencode(word)) + 1


def _check_sizes(spec: Spec, prefix: list[str]) -> None:
    env = spec.engine.env | spec.launch.env
    named: list[tuple[str, str]] = [("launch.args", a) for a in spec.launch.args]
    named += [(f"space[{flag!r}]", str(v)) for flag, vs in spec.axes().items() for v in vs]
    named += [(f"reference[{flag!r}]", str(v)) for flag, v in spec.reference.items()]
    named += [(f"the environment variable {k}", f"{k}={v}") for k, v in env.items()]
    for where, word in named:
        if _size(word) > MAX_ARG_STRLEN:
            raise SpecError(
                f"a value in {where} is {_size(word) - 1} bytes; Linux passes at most "
                f"{MAX_ARG_STRLEN // 1024} KiB per argument: pass it in a file instead."
            )
    longest = sum(_size(w) for w in [*prefix, *spec.launch.args])
    longest += sum(max(_size(str(v)) for v in vs) + _size(f) for f, vs in spec.axes().items())
    longest += sum(_size(f"{k}={v}") for k, v in (os.environ | env).items())
    limit = os.sysconf("SC_ARG_MAX") if hasattr(os, "sysconf") else 2 * 1024 * 1024
    if longest > limit:
        raise SpecError(
            f"the longest command line with its environment is {longest} bytes, over this "
            f"system's limit of {limit}; shorten the flag values or the environment."
        )


def preflight(spec: Spec, prefix: list[str]) -> None:
    """Raise SpecError for what would make every launch fail; ``prefix`` starts the engine."""
    if prefix:
        _check_program(prefix)
    _check_sizes(spec, prefix)
    try:
        BenchConfig.from_spec(spec.bench, model=None)
    except ValueError as exc:
        where = spec.source or "the spec"
        raise SpecError(f"{where}: [bench]: {exc}.") from exc
