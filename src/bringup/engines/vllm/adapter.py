"""vLLM adapter (``vllm serve M``; read against vLLM 0.33.0).

Launch: ``vllm serve MODEL --host H --port P`` (the model is positional; with
``engine.binary`` set to a Python interpreter, ``python -m vllm.entrypoints.cli.main
serve``). Parallelism: ``-tp``, ``-pp``, ``-dp`` and the switch ``-ep``; GPUs via
``engine.gpus`` -> ``CUDA_VISIBLE_DEVICES``. Always pass ``--host``: its default binds all.

Health: the port does not accept connections until the engine is built, profiled and its
CUDA graphs captured (connection refused, never a loading 503); then ``/health`` -> 200
without generating. A 503 means the engine core died (``EngineDeadError``). Ready lines:
``Starting vLLM server on http://...`` then ``Application startup complete.``. What it
chose comes from the log (``Using X attention backend``, the engine config line,
``non-default args``); ``/server_info`` exists only with ``VLLM_SERVER_DEV_MODE=1``.
Flags: argparse, ``--help=all`` lists them; ``--max_num_seqs`` means ``--max-num-seqs``,
``-O3`` means ``--optimization-level 3`` and ``-cc.mode 3`` sets one JSON key.
Offline, the captured help of the installed version is used (0.26.0, run for real on an
H200, or 0.33.0; :func:`bringup.engines.flagcheck.captured_entry`); 0.26's ``--no-enable-X``
switches are 0.33's ``--disable-X`` (known changes in ``flags.py``). ``rules.PHASES`` names
vLLM's start-up phases from its real log, so a hang says which one it reached.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from bringup.engines.base import EngineImage, HealthState
from bringup.engines.helptext import ParseOptions
from bringup.engines.profiling import ProfilingEndpoints
from bringup.engines.pyengine import PythonEngineAdapter, int_flag
from bringup.engines.vllm import flags, logs, profiling, rules, sim
from bringup.spec import Config, FlagValue

INSTALL_HINT = (
    "install it on the GPU machine with `pip install vllm` (https://docs.vllm.ai), or point "
    "engine.binary at its `vllm` script or at a Python interpreter that has vllm installed"
)

_CONFIG_KEYS = (
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "enforce_eager",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "max_seq_len",
)
_CHOSEN_ARGS = re.compile(r".*_backend|.*dtype|quantization|max_num_\w+|.*_size|enforce_eager")


def non_default_args(log_text: str) -> dict[str, str]:
    """The ``non-default args: {...}`` dict vLLM logs at start-up, as text."""
    found: dict[str, str] = {}
    for m in re.finditer(r"non-default args: (\{.*\})\s*$", log_text, re.M):
        try:
            parsed = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):
            continue
        if isinstance(parsed, dict):
            found |= {str(k): str(v) for k, v in parsed.items() if _CHOSEN_ARGS.fullmatch(str(k))}
    return found


class VLLMAdapter(PythonEngineAdapter):
    name = "vllm"
    aliases = ("vllm-serve",)
    display = "vLLM"
    executable = "vllm"
    subcommand = ("serve",)
    module = "vllm.entrypoints.cli.main"
    module_args = ("serve",)
    dists = ("vllm", "torch", "flashinfer-python")
    help_args = ("--help=all",)
    help_markers = ("--port", "--gpu-memory-utilization", "--max-num-seqs")
    model_flag = None
    parse_options = ParseOptions(
        normalize_underscores=True, dotted_keys=True, version_pattern=flags.VERSION_IN_HELP
    )
    install_hint = INSTALL_HINT
    health_path = "/health"
    ready_pattern = logs.READY
    info_paths = ("/version",)
    version_path = "/version"
    rules = (rules.RULES,)
    fatal_patterns = logs.FATAL
    captured_help = flags.CAPTURED
    older_help = flags.OLDER_CAPTURES
    known_changes = flags.KNOWN_CHANGES
    image = EngineImage(
        "vllm/vllm-openai:latest",
        "vllm/vllm-openai:latest",
        pinned_cpu="vllm/vllm-openai:v{version}",
        pinned_gpu="vllm/vllm-openai:v{version}",
    )
    sim_profile = sim.PROFILE
    chosen_patterns = (
        ("version", r"vLLM API server version (\S+)"),
        ("version", r"Initializing a V1 LLM engine \(v([\w.+-]+)\)"),  # 0.26 logs no banner line
        ("gpu_kv_cache_tokens", r"GPU KV cache size: ([\d,]+) tokens"),
        *((key, rf"with config: .*?\b{key}=([^,\s]+)") for key in _CONFIG_KEYS),
    )

    def health_state(self, status: int, body: bytes) -> HealthState:
        # vLLM never answers while loading; a 503 is a dead engine core
        return HealthState.READY if status == 200 else HealthState.UNHEALTHY

    def normalize_flags(self, flags: Mapping[str, FlagValue]) -> Config:
        out: Config = {}
        for flag, value in flags.items():
            if re.fullmatch(r"-O=?\d", flag):
                out["--optimization-level"] = int(flag[-1])
            elif flag == "-O" and value is not True:
                out["--optimization-level"] = value
            else:
                out[flag] = value
        return out

    def gpus_needed(self, config: Mapping[str, FlagValue]) -> int:
        tp = int_flag(config, "--tensor-parallel-size")
        pp = int_flag(config, "--pipeline-parallel-size")
        dp = int_flag(config, "--data-parallel-size-local", "--data-parallel-size")
        return tp * pp * dp

    def chosen(self, log_text: str) -> dict[str, str]:
        return non_default_args(log_text) | super().chosen(log_text)

    def read_chosen(self, lines: list[str], found: dict[str, str]) -> None:
        logs.read_chosen(lines, found)

    def profiling(self, output_dir: str) -> ProfilingEndpoints | None:
        return profiling.endpoints(output_dir)
