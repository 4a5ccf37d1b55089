"""How the simulated engine imitates ``sglang serve``: the port opens late, then 503 while
it warms up, then 200."""

from __future__ import annotations

from bringup.testing.simengine.profile import SimProfile

PROFILE = SimProfile(
    log_format="[{stamp}] {line}",
    listen="listen_s",
    ready_lines=("The server is fired up and ready to roll!",),
    model_flags=("--model-path", "--model"),
    model_required="sglang serve: error: the following arguments are required: --model-path",
    default_port=30000,
    reject="usage: sglang serve [-h] ...\nsglang serve: error: unrecognized arguments: {flag}",
)
