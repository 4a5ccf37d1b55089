"""What the Python serving engines (SGLang, vLLM, TensorRT-LLM) have in common.

:class:`PythonEngineAdapter` finds the engine (``engine.binary``, which may be a whole
prefix such as ``python -m sglang.launch_server``; else the console script on PATH or next
to bringup's own interpreter), builds ``<prefix> [model] --host H --port P <args> <flags>``,
selects GPUs with ``CUDA_VISIBLE_DEVICES`` from ``engine.gpus``, accepts hub ids as
models, checks flags against the engine's own ``--help`` (or the captured one) and reads
its version, torch build and GPUs for the fingerprint. Subclasses fill in the names.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bringup.engines.base import EngineAdapter, EngineInfo, FlagProblem, render_flags
from bringup.engines.fingerprint import gpu_facts, python_fingerprint
from bringup.engines.flagcheck import args_to_config, check_config, check_env, engine_table
from bringup.engines.helptext import FlagTable, ParseOptions, parse_help
from bringup.errors import EngineNotInstalledError, ModelNotFoundError
from bringup.spec import Config, FlagValue, Spec

# "org/name" (optionally "org/name:revision"): a model hub id rather than a local path
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(:[\w.-]+)?")


def looks_like_hub_id(path: str) -> bool:
    return bool(_HUB_ID.fullmatch(path)) and not path.endswith((".gguf", ".bin", ".safetensors"))


class PythonEngineAdapter(EngineAdapter):
    display: str = ""  # "SGLang"
    executable: str = ""  # console script, e.g. "sglang"
    subcommand: tuple[str, ...] = ("serve",)
    module: str | None = None  # for "python -m <module>"
    module_args: tuple[str, ...] = ()  # after "python -m <module>", e.g. ("serve",)
    dists: tuple[str, ...] = ()  # distributions whose versions make the fingerprint
    help_args: tuple[str, ...] = ("--help",)
    help_markers: tuple[str, ...] = ("--port",)  # flags real help always lists
    model_flag: str | None = None  # None: the model is the first positional argument
    host_flag: str = "--host"
    port_flag: str = "--port"
    served_name_flag: str | None = "--served-model-name"
    parse_options: ParseOptions = ParseOptions()
    chosen_patterns: tuple[tuple[str, str], ...] = ()  # (key, regex whose group 1 is the value)
    version_path: str | None = None  # the info endpoint whose JSON names the version

    # -- where the engine is ------------------------------------------------------------
    def locate(self, spec: Spec) -> list[str]:
        if spec.engine.binary:
            argv = shlex.split(spec.engine.binary)
            exe = shutil.which(argv[0]) if argv else None
            if exe is None:
                raise EngineNotInstalledError(
                    f"engine.binary {spec.engine.binary!r} cannot be run: {argv[0] if argv else ''}"
                    f" is not an executable file or on PATH; {self.install_hint}."
                )
            if len(argv) > 1:
                return [exe, *argv[1:]]
            if Path(exe).name.startswith("python") and self.module:
                return [exe, "-m", self.module, *self.module_args]
            if Path(exe).name == self.executable:
                return [exe, *self.subcommand]
            return [exe]
        beside = Path(sys.executable).parent / self.executable
        found = shutil.which(self.executable) or (str(beside) if beside.is_file() else None)
        if found is None:
            raise EngineNotInstalledError(
                f"{self.display} is not installed here ({self.executable} is not on PATH); "
                f"{self.install_hint}."
            )
        return [found, *self.subcommand]

    # -- the command line ---------------------------------------------------------------
    def normalize_flags(self, flags: Mapping[str, FlagValue]) -> Config:
        """The flags as the engine's parser will see them (vLLM: ``-O3``)."""
        return dict(flags)

    def model_argv(self, spec: Spec) -> list[str]:
        model = self.model_location(spec)
        argv = [self.model_flag, model] if self.model_flag else [model]
        if spec.model.name and self.served_name_flag:
            argv += [self.served_name_flag, spec.model.name]
        return argv

    def build_command(
        self, spec: Spec, flags: Mapping[str, FlagValue], host: str, port: int
    ) -> list[str]:
        return [
            *self.locate(spec),
            *self.model_argv(spec),
            self.host_flag,
            host,
            self.port_flag,
            str(port),
            *spec.launch.args,
            *self.render(self.normalize_flags(flags), self._table_cache or self.flag_table(spec)),
        ]

    def render(self, flags: Mapping[str, FlagValue], table: FlagTable | None) -> list[str]:
        """As :func:`render_flags`, splitting values of flags that take several tokens."""
        argv: list[str] = []
        for flag, value in flags.items():
            spec = table.lookup(flag).spec if table is not None else None
            if isinstance(value, str) and spec is not None and spec.multiple:
                argv += [flag, *value.split()]
            else:
                argv += render_flags({flag: value})
        return argv

    _table_cache: FlagTable | None = None

    def env(self, spec: Spec, flags: Mapping[str, FlagValue]) -> dict[str, str]:
        env = super().env(spec, flags)
        if spec.engine.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in spec.engine.gpus)
        return env

    # -- before launching ---------------------------------------------------------------
    def check_model(self, spec: Spec) -> None:
        path = spec.model.path
        if not path:
            raise ModelNotFoundError(
                f"{self.display} needs model.path: a local checkpoint folder or a hub id "
                "such as Qwen/Qwen3-0.6B."
            )
        if Path(path).exists() or looks_like_hub_id(path):
            return
        raise ModelNotFoundError(
            f"model path {path} does not exist; set model.path to an existing checkpoint "
            "folder or to a hub id such as Qwen/Qwen3-0.6B."
        )

    def flag_table(self, spec: Spec) -> FlagTable:
        """The engine's flags: ``engine.help_file``, else its own help, else captured."""
        opts = self.parse_options
        if spec.engine.help_file:
            path = Path(spec.engine.help_file).expanduser()
            if not path.is_file():
                raise EngineNotInstalledError(
                    f"engine.help_file {path} does not exist; save `{self.executable} "
                    f"{' '.join(self.subcommand + self.help_args)}` there or remove the field."
                )
            table = parse_help(
                path.read_text(encoding="utf-8", errors="replace"),
                engine=self.display,
                version=_version_in_name(path.name),
                source=f"engine.help_file {path}",
                options=opts,
            )
        else:
            try:
                argv = self.locate(spec)
            except EngineNotInstalledError:
                why = f"{self.display} is not installed here"
                table = engine_table(self.name, None, why=why, options=opts)
            else:
                table = engine_table(
                    self.name,
                    [*argv, *self.help_args],
                    version=self.info(spec).version,
                    markers=self.help_markers,
                    env=self.env(spec, {}),
                    options=opts,
                )
        self._table_cache = table
        return table

    def launch_config(self, spec: Spec, flags: Mapping[str, FlagValue]) -> Config:
        """``launch.args`` (read with each flag's arity from the engine's help) under the
        trial's flags, as the engine's parser will see them."""
        return self._launch_config(self._table_cache or self.flag_table(spec), spec, flags)

    def _launch_config(
        self, table: FlagTable, spec: Spec, flags: Mapping[str, FlagValue]
    ) -> Config:
        return {**args_to_config(table, spec.launch.args), **self.normalize_flags(flags)}

    def gpus_for(self, spec: Spec, flags: Mapping[str, FlagValue]) -> int:
        return self.gpus_needed(self.canonical(self.launch_config(spec, flags)))

    def check_flags(self, spec: Spec, flags: Mapping[str, FlagValue]) -> list[FlagProblem]:
        table = self.flag_table(spec)  # read once: the config and its check use the same help
        config = self._launch_config(table, spec, flags)
        problems = check_config(table, config, self.name)
        problems += check_env(self.name, {**spec.engine.env, **spec.launch.env})
        problems += self.extra_checks(spec, config)
        return problems

    def extra_checks(self, spec: Spec, config: Mapping[str, FlagValue]) -> list[FlagProblem]:
        """Engine-specific refusals beyond the help text (GPU count by default)."""
        need = self.gpus_needed(self.canonical(config))  # config: from launch_config
        if spec.engine.gpus is not None and need > len(spec.engine.gpus):
            return [
                FlagProblem(
                    "engine.gpus",
                    f"the parallelism flags need {need} GPUs but engine.gpus names "
                    f"{len(spec.engine.gpus)} ({spec.engine.gpus}).",
                )
            ]
        return []

    def gpus_needed(self, config: Mapping[str, FlagValue]) -> int:
        """GPUs the parallelism flags ask for; ``config`` uses canonical flag names."""
        return 1

    def canonical(self, config: Mapping[str, FlagValue]) -> Config:
        """``config`` with every flag under its canonical name (``-tp`` -> long name)."""
        table = self._table_cache
        out: Config = {}
        for flag, value in config.items():
            spec = table.lookup(flag).spec if table is not None else None
            out[spec.canonical if spec is not None else flag] = value
        return out

    # -- what it is and what it did -----------------------------------------------------
    def info(self, spec: Spec) -> EngineInfo:
        try:
            argv = self.locate(spec)
        except EngineNotInstalledError:
            return EngineInfo(name=self.name, details=gpu_facts(spec.engine.gpus))
        facts = python_fingerprint(argv, self.dists)
        own = self.dists[0] if self.dists else None  # the engine's own distribution
        version = facts.get(own, "unknown") if own else "unknown"
        details = {k: v for k, v in facts.items() if k != own}
        details |= gpu_facts(spec.engine.gpus)
        details["command"] = " ".join(argv)
        return EngineInfo(name=self.name, version=version, details=details)

    def served_model(self, spec: Spec) -> str | None:
        return spec.model.name or spec.model.path

    def version_from_info(self, path: str, payload: Any) -> str | None:
        if path == self.version_path and isinstance(payload, dict) and payload.get("version"):
            return str(payload["version"])
        return None

    def chosen(self, log_text: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for key, pattern in self.chosen_patterns:
            for m in re.finditer(pattern, log_text, re.M):
                found[key] = m.group(1).strip()
        return found | super().chosen(log_text)


def _version_in_name(name: str) -> str:
    m = re.search(r"(\d+\.\d+(?:\.\d+)?(?:[.\w]*)?|b\d{4,})", name)
    return m.group(1).rstrip(".") if m else "unknown"


def int_flag(config: Mapping[str, FlagValue], *names: str, default: int = 1) -> int:
    """The integer value of the first of ``names`` present in ``config``."""
    for name in names:
        value = config.get(name)
        if value is not None and not isinstance(value, bool):
            try:
                return int(value)
            except ValueError:
                return default
    return default
