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

import re
from collections.abc import Mapping
from typing import Any

from bringup.engines.base import EngineAdapter
from bringup.engines.profiling import ProfilingEndpoints, sglang_profiling
from bringup.engines.pyengine import PythonEngineAdapter, int_flag
from bringup.engines.registry import hookimpl
from bringup.spec import FlagValue

INSTALL_HINT = (
    "install it on the GPU machine with `pip install sglang` (https://docs.sglang.ai), "
    "or point engine.binary at its `sglang` script or at "
    "'/path/to/python -m sglang.launch_server'"
)

# resolved server arguments worth keeping with a trial
_CHOSEN_KEY = re.compile(
    r".*_backend|.*_dtype|dtype|quantization|speculative_\w+|cuda_graph\w*|disable_cuda_graph"
    r"|mamba_\w*strategy|(tp|dp|ep|pp|attn_dp|moe_dp)_size|mem_fraction_static|page_size"
    r"|max_running_requests|chunked_prefill_size|max_total_tokens|max_prefill_tokens"
)
_SERVER_ARGS_ITEM = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\[[^\]]*\]|[^,()\s]+)")


def _keep(key: str, value: Any) -> bool:
    return bool(_CHOSEN_KEY.fullmatch(key)) and value is not None and value != "None"


def server_args_from_log(log_text: str) -> dict[str, str]:
    """The resolved arguments SGLang prints as ``server_args=ServerArgs(...)``."""
    found: dict[str, str] = {}
    for line in log_text.splitlines():
        start = line.find("server_args=ServerArgs(")
        if start < 0:
            continue
        for key, raw in _SERVER_ARGS_ITEM.findall(line[start + len("server_args=ServerArgs(") :]):
            value = raw[1:-1] if raw.startswith("'") else raw
            if _keep(key, value):
                found[key] = value
    return found


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
    ready_pattern = r"The server is fired up and ready to roll!"
    health_timeout_s = 25.0  # /health waits up to 20 s for the scheduler before a 503
    info_paths = ("/server_info", "/model_info")
    fatal_patterns = (
        r"Initialization failed\. warmup error",
        r"Received sigquit from a child process",
        r"Scheduler hit an exception",
        r"sglang serve: error:|launch_server\.py: error:",
    )
    chosen_patterns = (
        ("attention_backend", r"Attention backend not specified\. Use (\w+) backend by default"),
        ("kv_cache_tokens", r"KV Cache is allocated\. #tokens: (\d+)"),
        ("max_total_num_tokens", r"max_total_num_tokens=(\d+)"),
        ("cuda_graph_bs", r"Capture cuda graph bs (\[[^\]]*\])"),
        ("model_dtype", r"Load weight end\. type=\w+, dtype=torch\.(\w+)"),
    )

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
        found = {k: str(v) for k, v in payload.items() if _keep(k, v) and not isinstance(v, dict)}
        states = payload.get("internal_states")
        if isinstance(states, list) and states and isinstance(states[0], dict):
            for key in ("max_total_num_tokens", "attention_backend", "cuda_graph"):
                if key in states[0]:
                    found[key] = str(states[0][key])
        return found

    def version_from_info(self, path: str, payload: Any) -> str | None:
        if path == "/server_info" and isinstance(payload, dict) and payload.get("version"):
            return str(payload["version"])
        return None

    def profiling(self, output_dir: str) -> ProfilingEndpoints | None:
        return sglang_profiling(output_dir)


@hookimpl
def register_engines(register: Any) -> None:
    adapter: EngineAdapter = SGLangAdapter()
    register(adapter)
