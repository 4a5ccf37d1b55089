"""Profiling endpoints of each engine, described for a later ``bringup profile`` command.

:class:`ProfilingEndpoints` says which HTTP calls start and stop a profile on a running
server, what must be on the command line or in the environment at launch for those
endpoints to exist, and where the traces land. Nothing here sends a request: the caller
launches the engine with :attr:`launch_flags` / :attr:`launch_env`, then issues
:meth:`start_request` and :meth:`stop_request`.

- SGLang: ``/start_profile`` and ``/stop_profile`` (GET or POST) always exist; the JSON
  body names ``output_dir`` and optionally ``num_steps`` (then it stops by itself);
  traces ``*.trace.json.gz`` (``srt/managers/io_struct.py:ProfileReq``).
- vLLM: POST only, and only when launched with ``--profiler-config`` naming a profiler
  and an absolute ``torch_profiler_dir`` (``VLLM_TORCH_PROFILER_DIR`` was removed in
  0.16); traces ``*.pt.trace.json.gz``.
- llama-server and trtllm-serve have no profiling endpoints.
"""

from __future__ import annotations

import json
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

    def start_request(self, num_steps: int | None = None) -> HttpCall:
        body: dict[str, Any] = {}
        if self.engine == "sglang":
            body = {"output_dir": self.output_dir, "activities": ["CPU", "GPU"]}
            if num_steps is not None:
                body["num_steps"] = num_steps
        elif self.engine == "vllm" and num_steps is not None:
            body = {"max_iterations": num_steps}
        return HttpCall(self.methods[0], self.start_path, body or None)

    def stop_request(self) -> HttpCall:
        return HttpCall(self.methods[0], self.stop_path, None)

    def traces(self) -> list[Path]:
        """Trace files written so far, newest last."""
        found = Path(self.output_dir).glob(self.trace_glob)
        return sorted(found, key=lambda p: p.stat().st_mtime)


def sglang_profiling(output_dir: str) -> ProfilingEndpoints:
    out = str(Path(output_dir).resolve())
    return ProfilingEndpoints(
        engine="sglang",
        start_path="/start_profile",
        stop_path="/stop_profile",
        methods=("POST", "GET"),
        output_dir=out,
        trace_glob="*.trace.json.gz",
        launch_env={"SGLANG_TORCH_PROFILER_DIR": out},
        self_stopping=True,
        note="a second start while one runs is refused: 'Profiling is already in progress'",
    )


def vllm_profiling(output_dir: str) -> ProfilingEndpoints:
    out = str(Path(output_dir).resolve())  # vLLM refuses a relative directory
    config = json.dumps({"profiler": "torch", "torch_profiler_dir": out})
    return ProfilingEndpoints(
        engine="vllm",
        start_path="/start_profile",
        stop_path="/stop_profile",
        methods=("POST",),
        output_dir=out,
        trace_glob="*.pt.trace.json.gz",
        launch_flags={"--profiler-config": config},
        self_stopping=True,
        note="without --profiler-config both endpoints answer 404",
    )
