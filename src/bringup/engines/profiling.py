"""Profiling endpoints of an engine, for ``bringup profile``.

:class:`ProfilingEndpoints` says which HTTP calls start and stop a profile on a running
server, what must be on the command line or in the environment at launch for those
endpoints to exist, and where the traces land. Nothing here sends a request: the caller
launches the engine with :attr:`launch_flags` / :attr:`launch_env`, then issues
:meth:`start_request` and :meth:`stop_request`. Each engine's folder describes its own
(its adapter's ``profiling``); an engine without endpoints returns None.

An engine without endpoints may still say where its decode time goes another way: its
adapter's ``compare_decode`` runs that comparison and returns a :class:`DecodeComparison`
(the text ``bringup profile`` prints and the fields it records). :attr:`step_pattern` is
the regular expression that finds one engine iteration among a trace's annotations (see
:mod:`bringup.profile.trace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FlagValue = str | int | float | bool  # as bringup.spec.FlagValue, without importing it


@dataclass(frozen=True)
class HttpCall:
    method: str
    path: str
    json_body: dict[str, Any] | None = None


@dataclass(frozen=True)
class ProfilingEndpoints:
    engine: str
    start_path: str
    stop_path: str
    methods: tuple[str, ...]  # accepted HTTP methods, preferred first
    output_dir: str
    trace_glob: str
    launch_flags: dict[str, FlagValue] = field(default_factory=dict)
    launch_env: dict[str, str] = field(default_factory=dict)
    self_stopping: bool = False  # start accepts a step count and stops by itself
    note: str = ""
    start_body: dict[str, Any] = field(default_factory=dict)  # JSON of every start request
    steps_key: str | None = None  # the start body's key for a step count, if it takes one
    # the annotation of one engine iteration, with groups ctx (prefilling requests) and
    # gen (decoding requests); None: the engine's traces carry no such annotation
    step_pattern: str | None = None

    def start_request(self, num_steps: int | None = None) -> HttpCall:
        body = dict(self.start_body)
        if num_steps is not None and self.steps_key:
            body[self.steps_key] = num_steps
        return HttpCall(self.methods[0], self.start_path, body or None)

    def stop_request(self) -> HttpCall:
        return HttpCall(self.methods[0], self.stop_path, None)

    def traces(self) -> list[Path]:
        """Trace files written so far, newest last."""
        found = Path(self.output_dir).glob(self.trace_glob)
        return sorted(found, key=lambda p: p.stat().st_mtime)


@dataclass(frozen=True)
class DecodeComparison:
    """What an engine without a profiler found about a trial's decode: ``text`` to print,
    ``record`` to add to ``bringup profile --json``."""

    text: str
    record: dict[str, Any] = field(default_factory=dict)
