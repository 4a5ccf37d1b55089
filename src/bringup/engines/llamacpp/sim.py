"""How the simulated engine imitates llama-server: 503 ``Loading model`` from the start."""

from __future__ import annotations

from bringup.testing.simengine.profile import SimProfile

PROFILE = SimProfile(
    listen="start",
    ready_lines=("srv  llama_server: model loaded", "srv  llama_server: listening on {url}"),
    loading_body={"error": {"message": "Loading model", "type": "unavailable_error", "code": 503}},
    ready_body={"status": "ok"},
    model_flags=("-m", "--model"),
    default_port=8080,
    reject="error: invalid argument: {flag}",
    reject_exit=1,
)
