"""How the simulated engine imitates ``vllm serve``: nothing listens until it is ready."""

from __future__ import annotations

from bringup.testing.simengine.profile import SimProfile

PROFILE = SimProfile(
    log_format="INFO {line}",
    ready_lines=("Starting vLLM server on {url}", "Application startup complete."),
    model_flags=("--model",),
    default_port=8000,
    reject="usage: vllm serve [-h] ...\nvllm serve: error: unrecognized arguments: {flag}",
)
