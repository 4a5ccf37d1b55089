"""Check a configuration against an engine's flag table before anything is launched.

:func:`check_config` returns one :class:`~bringup.engines.base.FlagProblem` per flag the
engine would refuse: an unknown flag (with the replacement from the adapter's ``known_changes`` or
the closest spelling in the help), an ambiguous argparse prefix, a value outside the
choices, a switch given a value or a valued flag given none. Every message names the
engine version and where its help came from, so a refusal read on a laptop from captured
help says so. :func:`engine_table` reads the installed engine's ``--help`` once per
process and falls back to the help the engine's folder ships (``<engine>/help/``, named by
its adapter's ``captured_help``); renamed flags come from the adapter's ``known_changes``.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from bringup.engines.base import EngineAdapter, FlagProblem
from bringup.engines.helptext import (
    DEFAULT_OPTIONS,
    FlagSpec,
    FlagTable,
    ParseOptions,
    Style,
    parse_help,
)
from bringup.spec import Config, FlagValue


@dataclass(frozen=True)
class KnownChange:
    """A flag (or one value of a flag) an engine renamed or removed."""

    flag: str
    note: str  # when and why, with the source
    replacement: str | None = None  # the flag (or "--flag value") to use instead
    value: str | None = None  # only this value of the flag changed


@dataclass(frozen=True)
class CapturedHelp:
    """Help text captured from one engine version, shipped in its folder's ``help/``."""

    package: str  # the engine's package, e.g. "bringup.engines.sglang"
    filename: str
    version: str
    style: Style

    def text(self) -> str:
        return (resources.files(self.package) / "help" / self.filename).read_text(encoding="utf-8")


def _adapter(engine: str) -> EngineAdapter:
    from bringup.engines.registry import find_engine

    adapter = find_engine(engine)
    if adapter is None or adapter.captured_help is None:
        raise KeyError(engine)
    return adapter


def _label(engine: str) -> str:
    from bringup.engines.registry import find_engine

    adapter = find_engine(engine)
    return adapter.label if adapter is not None else engine


_cache: dict[tuple[str, ...], FlagTable] = {}


def captured_help(engine: str) -> str:
    captured = _adapter(engine).captured_help
    assert captured is not None
    return captured.text()


def _version_key(version: str) -> tuple[int, ...] | None:
    m = re.match(r"v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def captured_entry(engine: str, version: str | None = None) -> CapturedHelp:
    """The capture for ``version``: the newest one not newer than it (the oldest when all
    are newer); the adapter's ``captured_help`` when the version is unknown."""
    adapter = _adapter(engine)
    assert adapter.captured_help is not None
    entries = [adapter.captured_help, *adapter.older_help]
    want = _version_key(version) if version else None
    if want is None or len(entries) == 1:
        return entries[0]
    keyed = sorted((k, i, e) for i, e in enumerate(entries) if (k := _version_key(e.version)))
    older = [e for k, _, e in keyed if k <= want]
    return older[-1] if older else keyed[0][2]


def captured_table(
    engine: str, options: ParseOptions = DEFAULT_OPTIONS, version: str | None = None
) -> FlagTable:
    """The flag table from help text captured earlier and shipped with bringup (the capture
    of ``version`` when it is known, see :func:`captured_entry`)."""
    captured = captured_entry(engine, version)
    key = ("captured", engine, captured.filename, repr(options))
    if key not in _cache:
        _cache[key] = parse_help(
            captured.text(),
            engine=_adapter(engine).label,
            version=captured.version,
            source=f"help text {captured.filename} shipped with bringup",
            style=captured.style,
            options=options,
        )
    return _cache[key]


def _with_reason(base: FlagTable, reason: str) -> FlagTable:
    return FlagTable(
        engine=base.engine,
        version=base.version,
        source=f"{base.source}, because {reason}",
        style=base.style,
        flags=base.flags,
        allow_abbrev=base.allow_abbrev,
        normalize_underscores=base.normalize_underscores,
        dotted_keys=base.dotted_keys,
    )


def engine_table(
    engine: str,
    help_argv: Sequence[str] | None,
    version: str = "unknown",
    markers: Sequence[str] = ("--port",),
    env: Mapping[str, str] | None = None,
    timeout_s: float = 180.0,
    why: str | None = None,
    options: ParseOptions = DEFAULT_OPTIONS,
) -> FlagTable:
    """The installed engine's own help when ``help_argv`` runs, else the captured help.

    The help must list every flag in ``markers`` to count: a stand-in that prints
    something else falls back to the captured help, and the table's ``source`` says why
    (``why`` when there was nothing to run).
    """
    if help_argv is None:
        base = captured_table(engine, options, version)
        return _with_reason(base, why) if why else base
    key = (engine, *help_argv, repr(options))
    if key in _cache:
        return _cache[key]
    shown = " ".join(help_argv)
    try:
        proc = subprocess.run(
            list(help_argv),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, **(env or {})},
            check=False,
        )
        text = proc.stdout if markers[0] in proc.stdout else proc.stdout + proc.stderr
        table = parse_help(
            text,
            engine=_label(engine),
            version=version,
            source=f"`{shown}`",
            options=options,
        )
        missing = [m for m in markers if table.lookup(m).spec is None]
        if not missing:
            _cache[key] = table
            return table
        reason = f"`{shown}` listed no {missing[0]} (exit {proc.returncode})"
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = f"`{shown}` failed: {exc}"
    table = _with_reason(captured_table(engine, options, version), reason)
    _cache[key] = table
    return table


def args_to_config(table: FlagTable, args: Sequence[str]) -> Config:
    """``launch.args`` as flag -> value, reading each flag's arity from ``table``."""
    out: Config = {}
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if not tok.startswith("-") or _is_number(tok):
            continue  # a positional or a stray value: the engine judges it
        name, eq, val = tok.partition("=")
        if eq:
            out[name] = val
            continue
        spec = table.lookup(name).spec
        values: list[str] = []
        if spec is not None and spec.takes_value:
            while i < len(args) and (not args[i].startswith("-") or _is_number(args[i])):
                values.append(args[i])
                i += 1
                if not spec.multiple:
                    break
        out[name] = " ".join(values) if values else True
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _items(spec: FlagSpec, value: FlagValue, style: Style) -> list[str]:
    """The separate values of one flag: llama.cpp lists are comma-separated."""
    text = str(value)
    if not spec.multiple:
        return [text]
    return text.replace(",", " ").split() if style != "argparse" else text.split()


def _change(engine: str, flag: str, value: str | None = None) -> KnownChange | None:
    from bringup.engines.registry import find_engine

    adapter = find_engine(engine)
    for change in adapter.known_changes if adapter is not None else ():
        if change.flag == flag and change.value == value:
            return change
    return None


def check_config(
    table: FlagTable,
    flags: Mapping[str, FlagValue],
    engine: str,
) -> list[FlagProblem]:
    """Every flag and value of ``flags`` the engine described by ``table`` would refuse."""
    problems: list[FlagProblem] = []
    where = table.origin
    for flag, value in flags.items():
        if value is False:
            continue  # rendered as nothing
        found = table.lookup(flag)
        name = flag.split("=", 1)[0]
        if found.spec is None:
            problems.append(_unknown(table, engine, name, found.ambiguous))
            continue
        spec = found.spec
        if found.subkey is not None:
            continue  # one key of a JSON-valued flag; the engine validates the JSON itself
        if value is True:
            if spec.takes_value and not spec.optional_value:
                wants = f" one of {', '.join(spec.choices)}" if spec.choices else f" {spec.metavar}"
                problems.append(
                    FlagProblem(name, f"{name} needs a value ({wants.strip()}) in {where}.")
                )
            continue
        if not spec.takes_value:
            problems.append(
                FlagProblem(
                    name,
                    f"{name} is a switch in {where} and takes no value; "
                    f"set it to true or false instead of {value!r}.",
                )
            )
            continue
        if spec.choices:
            bad = [
                item
                for item in _items(spec, value, table.style)
                if item not in spec.choices and not (spec.numeric_ok and _is_number(item))
            ]
            if bad:
                problems.append(_bad_value(engine, name, spec, bad[0], where))
    return problems


def _unknown(table: FlagTable, engine: str, name: str, ambiguous: tuple[str, ...]) -> FlagProblem:
    change = _change(engine, name)
    if ambiguous:
        msg = f"{name} is ambiguous in {table.origin}: it could be {', '.join(ambiguous)}"
    else:
        msg = f"{name} is not a flag of {table.origin}"
    if change is not None:
        return FlagProblem(
            name, f"{msg}; {change.note}: use {change.replacement}.", change.replacement
        )
    close = difflib.get_close_matches(name, table.names(), n=3, cutoff=0.6)
    if ambiguous:
        return FlagProblem(name, f"{msg}; write the full flag name.", ambiguous[0])
    if close:
        return FlagProblem(name, f"{msg}; did you mean {' or '.join(close)}?", close[0])
    return FlagProblem(name, f"{msg}; remove it or check the engine version.")


def _bad_value(engine: str, name: str, spec: FlagSpec, item: str, where: str) -> FlagProblem:
    choices = list(spec.choices or ())
    msg = f"{name} {item} is not accepted by {where}; valid choices: {', '.join(choices)}"
    change = _change(engine, spec.canonical, item) or _change(engine, name, item)
    if change is not None:
        return FlagProblem(
            name, f"{msg}. {change.note[0].upper()}{change.note[1:]}.", change.replacement
        )
    folded = [c for c in choices if c.lower() == item.lower()]
    prefixed = [c for c in choices if c.startswith(item)]
    close = folded or prefixed or difflib.get_close_matches(item, choices, n=2, cutoff=0.6)
    if close:
        return FlagProblem(name, f"{msg}; did you mean {close[0]}?", f"{name} {close[0]}")
    return FlagProblem(name, f"{msg}.")


def check_env(engine: str, env: Mapping[str, str]) -> list[FlagProblem]:
    """Environment variables the engine no longer reads (set in the spec, silently ignored)."""
    out = []
    for key in env:
        change = _change(engine, key)
        if change is not None:
            out.append(
                FlagProblem(
                    key, f"{key}: {change.note}; use {change.replacement}.", change.replacement
                )
            )
    return out
