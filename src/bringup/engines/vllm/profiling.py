"""vLLM's profiling endpoints: POST only, and only when launched with ``--profiler-config``
naming a profiler and an absolute ``torch_profiler_dir`` (``VLLM_TORCH_PROFILER_DIR`` was
removed in 0.16); traces ``*.pt.trace.json.gz``. The worker annotates each iteration
``execute_context_<n>(<tokens>)_generation_<n>(<tokens>)`` (:data:`STEP_PATTERN`)."""

from __future__ import annotations

import json
from pathlib import Path

from bringup.engines.profiling import ProfilingEndpoints

STEP_PATTERN = r"execute_context_(?P<ctx>\d+)\((?P<ctx_tokens>\d+)\)_generation_(?P<gen>\d+)"


def endpoints(output_dir: str) -> ProfilingEndpoints:
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
        steps_key="max_iterations",
        step_pattern=STEP_PATTERN,
    )
