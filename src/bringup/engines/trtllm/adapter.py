"""TensorRT-LLM adapter (``trtllm-serve serve M``; read from source at commit 00209af).

Launch: ``trtllm-serve serve MODEL --host H --port P --backend pytorch|tensorrt|_autodeploy``
(flags use underscores: ``--tp_size``, ``--ep_size``, ``--max_batch_size``,
``--free_gpu_memory_fraction``). Backend and precision choices live in the LLM-API YAML
passed with ``--config``; a spec searches them as dotted pseudo-flags such as
``--config.kv_cache_config.dtype`` or ``--config.attn_backend``, which this adapter writes
into one YAML file per configuration (JSON text, which YAML reads) and passes as
``--config FILE``. GPUs: ``engine.gpus`` -> ``CUDA_VISIBLE_DEVICES``.

Health: releases up to at least commit e7f7345 build the model before listening
(connection refused while loading); newer main listens early and answers 503
(``x-trtllm-server-state: starting``). Ready: ``/health`` -> 200; ready line uvicorn's
``Application startup complete``. Flags are click options; the fallback help is
reconstructed from the source (see ``help/trtllm-serve-00209af-options-from-source.txt``).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bringup.engines.base import EngineImage, FlagProblem
from bringup.engines.helptext import ParseOptions
from bringup.engines.pyengine import PythonEngineAdapter, int_flag
from bringup.engines.trtllm import flags, logs, rules, sim
from bringup.spec import Config, FlagValue, Spec

INSTALL_HINT = (
    "install TensorRT-LLM on the GPU machine (`pip install tensorrt-llm` from NVIDIA's index, "
    "or NVIDIA's container), or point engine.binary at its `trtllm-serve` script"
)
CONFIG_PREFIX = "--config."

# LLM-API values read in tensorrt_llm/llmapi/llm_args.py and _torch/attention_backend/:
# an unknown attn_backend silently falls back to TRTLLM, so it is refused here instead.
ATTN_BACKENDS = ("TRTLLM", "FLASHINFER", "FLASHINFER_STAR_ATTENTION", "VANILLA")


def yaml_options(flags: Mapping[str, FlagValue]) -> dict[str, Any]:
    """``{"--config.kv_cache_config.dtype": "fp8"}`` -> ``{"kv_cache_config": {"dtype": ...}}``."""
    tree: dict[str, Any] = {}
    for flag, value in flags.items():
        if not flag.startswith(CONFIG_PREFIX):
            continue
        *parents, leaf = flag[len(CONFIG_PREFIX) :].split(".")
        node = tree
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return tree


def write_yaml_options(options: Mapping[str, Any], directory: Path | None = None) -> Path:
    """Write the options once per distinct content and return the file's path."""
    text = json.dumps(options, sort_keys=True, indent=2) + "\n"
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = directory or Path(tempfile.gettempdir()) / "bringup-trtllm"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"llm-api-{digest}.yaml"
    if not path.exists():
        path.write_text(text, encoding="utf-8")
    return path


class TRTLLMAdapter(PythonEngineAdapter):
    name = "trtllm"
    aliases = ("tensorrt-llm", "tensorrt_llm", "trtllm-serve")
    display = "TensorRT-LLM"
    executable = "trtllm-serve"
    subcommand = ("serve",)
    module = "tensorrt_llm.commands.serve"
    module_args = ("serve",)
    dists = ("tensorrt_llm", "torch")
    help_markers = ("--port", "--max_batch_size")
    model_flag = None
    served_name_flag = None  # trtllm-serve answers under the model argument
    parse_options = ParseOptions(dotted_keys=True)
    install_hint = INSTALL_HINT
    ready_pattern = logs.READY
    info_paths = ("/version",)
    version_path = "/version"
    rules = (rules.RULES,)
    fatal_patterns = logs.FATAL
    captured_help = flags.CAPTURED
    image = EngineImage(
        "nvcr.io/nvidia/tensorrt-llm/release:latest",
        "nvcr.io/nvidia/tensorrt-llm/release:latest",
        pinned_cpu="nvcr.io/nvidia/tensorrt-llm/release:{version}",
        pinned_gpu="nvcr.io/nvidia/tensorrt-llm/release:{version}",
    )
    sim_profile = sim.PROFILE
    chosen_patterns = (("version", r"TensorRT-LLM version: (\S+)"),)

    def normalize_flags(self, flags: Mapping[str, FlagValue]) -> Config:
        # click's ChoiceWithAlias accepts "trt" for "tensorrt"
        return {k: ("tensorrt" if k == "--backend" and v == "trt" else v) for k, v in flags.items()}

    def build_command(
        self, spec: Spec, flags: Mapping[str, FlagValue], host: str, port: int
    ) -> list[str]:
        flags = self.normalize_flags(flags)
        plain = {k: v for k, v in flags.items() if not k.startswith(CONFIG_PREFIX)}
        options = yaml_options(flags)
        if options:
            plain["--config"] = str(write_yaml_options(options))
        return super().build_command(spec, plain, host, port)

    def extra_checks(self, spec: Spec, config: Mapping[str, FlagValue]) -> list[FlagProblem]:
        problems = super().extra_checks(spec, config)
        dotted = [k for k in config if k.startswith(CONFIG_PREFIX)]
        if dotted and any(k in config for k in ("--config", "--extra_llm_api_options")):
            problems.append(
                FlagProblem(
                    "--config",
                    "set either --config FILE or --config.<key> values, not both: "
                    "the generated YAML would replace the file.",
                )
            )
        attn = config.get(CONFIG_PREFIX + "attn_backend")
        if attn is not None and str(attn).upper() not in ATTN_BACKENDS:
            problems.append(
                FlagProblem(
                    CONFIG_PREFIX + "attn_backend",
                    f"attn_backend {attn} is not one of {', '.join(ATTN_BACKENDS)} "
                    "(TensorRT-LLM falls back to TRTLLM silently, so the trial would "
                    "measure something else).",
                )
            )
        backend = str(config.get("--backend", "pytorch"))
        if backend == "tensorrt" and CONFIG_PREFIX + "kv_cache_config.dtype" in config:
            problems.append(
                FlagProblem(
                    CONFIG_PREFIX + "kv_cache_config.dtype",
                    "kv_cache_config.dtype is read only by the pytorch backend "
                    "(llm_args.py: 'only for the Pytorch backend'); with --backend tensorrt "
                    "the engine's build decides the KV dtype.",
                )
            )
        return problems

    def gpus_needed(self, config: Mapping[str, FlagValue]) -> int:
        tp = int_flag(config, "--tensor_parallel_size")
        pp = int_flag(config, "--pipeline_parallel_size")
        cp = int_flag(config, "--context_parallel_size")
        return tp * pp * cp

    def read_chosen(self, lines: list[str], found: dict[str, str]) -> None:
        logs.read_chosen(lines, found)
