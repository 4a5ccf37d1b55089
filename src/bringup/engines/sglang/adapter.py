"""SGLang adapter (``sglang serve --model-path M``; read against SGLang 0.5.23).

Launch: ``sglang serve`` or, with ``engine.binary`` pointing at a Python interpreter,
``python -m sglang.launch_server`` (same flags). Parallelism is the engine's own flags
(``--tp-size``, ``--dp-size``, ``--ep-size``, ``--pp-size``, ``--attn-dp-size``); GPUs are
picked with ``engine.gpus`` -> ``CUDA_VISIBLE_DEVICES``.

Health: nothing listens until weights, KV cache and CUDA graphs are ready; then ``/health``
answers 503 (empty body) through the warm-up request and 200 once up. Each ``/health``
also runs a one-token generation and may take up to ``SGLANG_HEALTH_CHECK_TIMEOUT`` (20 s)
before a 503. Ready line: ``The server is fired up and ready to roll!``. What it chose:
the ``server_args=ServerArgs(...)`` line of the log, or ``GET /server_info`` (resolved
arguments plus ``version``). Flags are parsed by argparse with ``allow_abbrev`` on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bringup.engines.base import EngineImage
from bringup.engines.profiling import ProfilingEndpoints
from bringup.engines.pyengine import PythonEngineAdapter, int_flag
from bringup.engines.sglang import flags, logs, profiling, rules, sim
from bringup.engines.sglang.logs import keep, server_args_from_log
from bringup.spec import FlagValue

INSTALL_HINT = (
    "install it on the GPU machine with `pip install sglang` (https://docs.sglang.ai), "
    "or point engine.binary at its `sglang` script or at "
    "'/path/to/python -m sglang.launch_server'"
)


class SGLangAdapter(PythonEngineAdapter):
    name = "sglang"
    aliases = ("sgl", "sglang-serve")
    display = "SGLang"
    executable = "sglang"
    subcommand = ("serve",)
    module = "sglang.launch_server"
    dists = ("sglang", "sglang-kernel", "flashinfer-python", "torch")
    help_markers = ("--port", "--model-path", "--mem-fraction-static")
    model_flag = "--model-path"
    install_hint = INSTALL_HINT
    health_path = "/health"
    ready_pattern = logs.READY
    health_timeout_s = 25.0  # /health waits up to 20 s for the scheduler before a 503
    info_paths = ("/server_info", "/model_info")
    version_path = "/server_info"
    rules = (rules.RULES,)
    fatal_patterns = logs.FATAL
    chosen_patterns = logs.CHOSEN_PATTERNS
    captured_help = flags.CAPTURED
    known_changes = flags.KNOWN_CHANGES
    image = EngineImage(
        "lmsysorg/sglang:latest",
        "lmsysorg/sglang:latest",
        pinned_cpu="lmsysorg/sglang:v{version}",
        pinned_gpu="lmsysorg/sglang:v{version}",
    )
    default_port = 30000  # sglang.launch_server's own default
    sim_profile = sim.PROFILE

    def gpus_needed(self, config: Mapping[str, FlagValue]) -> int:
        tp = int_flag(config, "--tp-size")
        pp = int_flag(config, "--pp-size")
        dp = int_flag(config, "--dp-size")
        # with DP attention the DP ranks live inside the TP group
        if config.get("--enable-dp-attention") is True or "--attn-dp-size" in config:
            dp = 1
        return tp * pp * dp

    def chosen(self, log_text: str) -> dict[str, str]:
        return server_args_from_log(log_text) | super().chosen(log_text)

    def chosen_from_info(self, path: str, payload: Any) -> dict[str, str]:
        if path != "/server_info" or not isinstance(payload, dict):
            return {}
        found = {k: str(v) for k, v in payload.items() if keep(k, v) and not isinstance(v, dict)}
        states = payload.get("internal_states")
        if isinstance(states, list) and states and isinstance(states[0], dict):
            for key in ("max_total_num_tokens", "attention_backend", "cuda_graph"):
                if key in states[0]:
                    found[key] = str(states[0][key])
        return found

    def read_chosen(self, lines: list[str], found: dict[str, str]) -> None:
        logs.read_chosen(lines, found)

    def profiling(self, output_dir: str) -> ProfilingEndpoints | None:
        return profiling.endpoints(output_dir)
