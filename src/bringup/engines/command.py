"""The generic ``command`` engine: any server with a health URL and an OpenAI-compatible API.

For engines without an adapter (text-generation-inference, a custom server, ...). The
spec gives the command line as a template::

    [engine]
    name = "command"
    command = ["text-generation-launcher", "--model-id", "{model}",
               "--hostname", "{host}", "--port", "{port}"]
    health_path = "/health"          # default /health
    ready_pattern = "Connected"      # optional: on this log line health is polled at once

``{model}``, ``{host}``, ``{port}`` and ``{name}`` (served model name) are filled in;
``launch.args`` and the trial's flags are appended. Flags are checked only when
``engine.help_file`` holds the server's ``--help``. Health: 200 ready, 503 loading.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bringup.engines.base import EngineAdapter, EngineInfo, FlagProblem, render_flags
from bringup.engines.flagcheck import args_to_config, check_config
from bringup.engines.helptext import parse_help
from bringup.engines.registry import hookimpl
from bringup.errors import EngineNotInstalledError, ModelNotFoundError
from bringup.spec import FlagValue, Spec

PLACEHOLDERS = ("{model}", "{host}", "{port}", "{name}")
EXAMPLE = '["my-server", "--model", "{model}", "--host", "{host}", "--port", "{port}"]'


class CommandAdapter(EngineAdapter):
    name = "command"
    aliases = ("generic", "custom")
    install_hint = f"set engine.command to the server's command line, e.g. {EXAMPLE}"

    def template(self, spec: Spec) -> list[str]:
        if not spec.engine.command:
            raise EngineNotInstalledError(
                f"engine 'command' needs engine.command, the server's command line with "
                f"placeholders, e.g. command = {EXAMPLE}."
            )
        return list(spec.engine.command)

    def locate(self, spec: Spec) -> list[str]:
        argv = self.template(spec)
        exe = shutil.which(argv[0])
        if exe is None:
            raise EngineNotInstalledError(
                f"engine.command starts with {argv[0]!r}, which is not an executable file or "
                "on PATH; install that server or give its full path."
            )
        return [exe, *argv[1:]]

    def build_command(
        self, spec: Spec, flags: Mapping[str, FlagValue], host: str, port: int
    ) -> list[str]:
        values = {
            "{model}": spec.model.path or "",
            "{host}": host,
            "{port}": str(port),
            "{name}": self.served_model(spec) or "",
        }
        argv = []
        for token in self.locate(spec):
            for key, value in values.items():
                token = token.replace(key, value)
            argv.append(token)
        return [*argv, *spec.launch.args, *render_flags(flags)]

    def env(self, spec: Spec, flags: Mapping[str, FlagValue]) -> dict[str, str]:
        env = super().env(spec, flags)
        if spec.engine.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in spec.engine.gpus)
        return env

    def health_path_for(self, spec: Spec) -> str:
        return spec.engine.health_path or self.health_path

    def ready_pattern_for(self, spec: Spec) -> str | None:
        return spec.engine.ready_pattern

    def check_flags(self, spec: Spec, flags: Mapping[str, FlagValue]) -> list[FlagProblem]:
        problems: list[FlagProblem] = []
        template = spec.engine.command or []
        if template and not any("{port}" in t for t in template) and spec.launch.port is None:
            problems.append(
                FlagProblem(
                    "engine.command",
                    "engine.command has no {port} placeholder, so the server cannot be told "
                    "the port bringup picked; add {port} or pin launch.port.",
                )
            )
        if spec.engine.help_file:
            path = Path(spec.engine.help_file).expanduser()
            if not path.is_file():
                raise EngineNotInstalledError(f"engine.help_file {path} does not exist.")
            name = Path(template[0]).name if template else "server"
            table = parse_help(
                path.read_text(encoding="utf-8", errors="replace"),
                engine=name,
                version="unknown",
                source=f"engine.help_file {path}",
            )
            config = {**args_to_config(table, spec.launch.args), **flags}
            problems += check_config(table, config, self.name)
        return problems

    def check_model(self, spec: Spec) -> None:
        path = spec.model.path or ""
        # "llama3:8b" or "org/name" are ids the server resolves; paths must exist
        looks_local = path.startswith(("/", "./", "../", "~")) or Path(path).suffix in (
            ".gguf",
            ".safetensors",
            ".bin",
        )
        if looks_local and not Path(path).expanduser().exists():
            raise ModelNotFoundError(
                f"model path {path} does not exist; set model.path to an existing file or "
                "folder, or to an id the server resolves itself."
            )

    def info(self, spec: Spec) -> EngineInfo:
        try:
            argv = self.locate(spec)
        except EngineNotInstalledError:
            return EngineInfo(name=self.name)
        return EngineInfo(name=self.name, details={"command": Path(argv[0]).name})

    def served_model(self, spec: Spec) -> str | None:
        return spec.model.name or spec.model.path


@hookimpl
def register_engines(register: Any) -> None:
    adapter: EngineAdapter = CommandAdapter()
    register(adapter)
