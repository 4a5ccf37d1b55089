"""SGLang's profiling endpoints: ``/start_profile`` and ``/stop_profile`` (GET or POST)
always exist; the JSON body names ``output_dir`` and optionally ``num_steps`` (then it stops
by itself); traces ``*.trace.json.gz`` (``srt/managers/io_struct.py:ProfileReq``)."""

from __future__ import annotations

from pathlib import Path

from bringup.engines.profiling import ProfilingEndpoints


def endpoints(output_dir: str) -> ProfilingEndpoints:
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
        start_body={"output_dir": out, "activities": ["CPU", "GPU"]},
        steps_key="num_steps",
    )
