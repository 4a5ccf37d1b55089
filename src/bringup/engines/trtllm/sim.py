"""How the simulated engine imitates ``trtllm-serve``: nothing listens until it is ready."""

from __future__ import annotations

from bringup.testing.simengine.profile import SimProfile

PROFILE = SimProfile(
    ready_lines=("Uvicorn running on {url}",),
    model_flags=("--model",),
    default_port=8000,
    reject="usage: trtllm-serve [-h] ...\ntrtllm-serve: error: unrecognized arguments: {flag}",
)
