"""The contract every engine adapter fulfils.

An adapter turns a spec plus one configuration (flag -> value) into the engine's own
command line, says how to read its health endpoint, which log lines are fatal or mark
readiness, what the engine actually chose, and which flags and values the installed engine
accepts. It also carries everything else bringup knows about the engine, so that one
folder holds it all: its diagnosis rule sets, its captured help with the flags it renamed,
its deployment image and the profile the simulated engine imitates. Adapters are plugins:
built-in ones register through the same hook as third-party ones (see
:mod:`bringup.engines.registry`).
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bringup.spec import FlagValue, Spec

if TYPE_CHECKING:
    from bringup.diagnose.rule import RuleSet
    from bringup.engines.flagcheck import CapturedHelp, KnownChange
    from bringup.engines.profiling import DecodeComparison, ProfilingEndpoints
    from bringup.testing.simengine.profile import SimProfile


class HealthState(enum.Enum):
    NOT_LISTENING = "not_listening"
    LOADING = "loading"
    READY = "ready"
    UNHEALTHY = "unhealthy"


@dataclass
class FlagProblem:
    """A flag or value the engine would refuse, found before launching."""

    flag: str
    message: str  # one sentence, naming valid choices and where they came from
    replacement: str | None = None


@dataclass(frozen=True)
class EngineImage:
    """The engine's official container images and the server program inside them.

    ``pinned_cpu``/``pinned_gpu`` name the image of one release, ``{version}`` filled with
    what ``version_pattern`` (one group) reads from the engine's version string: a
    deployment ships the build that was proven, never a floating tag.
    """

    cpu: str
    gpu: str
    program: str | None = None  # None: the command's first word is on the image's PATH
    pinned_cpu: str | None = None
    pinned_gpu: str | None = None
    version_pattern: str = r"^v?(\d+(?:\.\d+)+(?:\.?post\d+|rc\d+)?)"

    def pinned(self, version: str, gpu: bool) -> str | None:
        """The image of ``version``; None when the version names no release."""
        template = self.pinned_gpu if gpu else self.pinned_cpu
        found = re.search(self.version_pattern, version.strip())
        if template is None or found is None:
            return None
        return template.format(version=found.group(1))


@dataclass
class EngineInfo:
    """What the engine says about itself (version, build) for the fingerprint."""

    name: str
    version: str = "unknown"
    details: dict[str, str] = field(default_factory=dict)


def render_flags(flags: Mapping[str, FlagValue]) -> list[str]:
    """``{"--flag": value}`` as argv. ``True`` is a bare switch, ``False`` omits it."""
    argv: list[str] = []
    for flag, value in flags.items():
        if value is True:
            argv.append(flag)
        elif value is False:
            continue
        else:
            argv.extend([flag, str(value)])
    return argv


class EngineAdapter:
    """Base adapter; subclasses override what differs for their engine."""

    name: str = ""
    aliases: tuple[str, ...] = ()  # every other spelling users and logs use; keys of the registry
    display: str = ""  # how its own documentation writes the name
    launchable: bool = True  # False: known to diagnosis only (bringup cannot start it)
    health_path: str = "/health"
    install_hint: str = ""
    # regex of the log line that marks readiness; seeing it makes readiness poll health at once
    ready_pattern: str | None = None
    health_timeout_s: float = 5.0  # one health request (some engines generate to answer it)
    info_paths: tuple[str, ...] = ()  # GET endpoints that describe the running server
    # what diagnosis knows: the engine's own rule sets (after the generic one) and the lines
    # that mean start-up has failed; ``read_chosen`` reads what it chose
    rules: tuple[RuleSet, ...] = ()
    fatal_patterns: tuple[str, ...] = ()
    captured_help: CapturedHelp | None = None  # help shipped for when it is not installed
    older_help: tuple[CapturedHelp, ...] = ()  # captures of older versions, picked by version
    known_changes: tuple[KnownChange, ...] = ()  # flags (or values) it renamed or removed
    image: EngineImage | None = None  # for `bringup deploy`
    default_port: int = 8000  # where a deployment serves when the spec pins no port
    sim_profile: SimProfile | None = None  # how the simulated engine imitates it

    @property
    def label(self) -> str:
        return self.display or self.name

    def locate(self, spec: Spec) -> list[str]:
        """The argv prefix that starts the engine; raises EngineNotInstalledError."""
        raise NotImplementedError

    def build_command(
        self, spec: Spec, flags: Mapping[str, FlagValue], host: str, port: int
    ) -> list[str]:
        raise NotImplementedError

    def env(self, spec: Spec, flags: Mapping[str, FlagValue]) -> dict[str, str]:
        return dict(spec.engine.env) | dict(spec.launch.env)

    def deploy_argv(self, argv: list[str], given: set[str]) -> list[str]:
        """A trial's command line as a deployment runs it: without what :meth:`build_command`
        added only so that bringup could watch the trial (``given``: the words the spec
        and the trial's flags set themselves, which always stay)."""
        return list(argv)

    def check_flags(self, spec: Spec, flags: Mapping[str, FlagValue]) -> list[FlagProblem]:
        """Flags or values the installed engine would refuse (checked before launch)."""
        return []

    def gpus_for(self, spec: Spec, flags: Mapping[str, FlagValue]) -> int:
        """Accelerators one launch with ``flags`` (over ``launch.args``) occupies: what its
        parallelism flags multiply to, read as the engine parses them. One by default."""
        return 1

    def health_state(self, status: int, body: bytes) -> HealthState:
        if status == 200:
            return HealthState.READY
        if status == 503:
            return HealthState.LOADING
        return HealthState.UNHEALTHY

    def info(self, spec: Spec) -> EngineInfo:
        return EngineInfo(name=self.name)

    def served_model(self, spec: Spec) -> str | None:
        """The model id the server will answer under, when the adapter can tell."""
        return spec.model.name

    def model_location(self, spec: Spec) -> str:
        if not spec.model.path:
            raise ValueError("model path is not resolved")
        return spec.model.path

    def check_model(self, spec: Spec) -> None:
        """Raise ModelNotFoundError when the model cannot possibly be loaded."""

    def chosen(self, log_text: str) -> dict[str, str]:
        """What the engine actually selected (backends, KV dtype, ...), read from its log."""
        from bringup.diagnose import extract_chosen

        return extract_chosen(log_text, engine=self.name)

    def read_chosen(self, lines: list[str], found: dict[str, str]) -> None:
        """Put what the log's message lines say the engine chose into ``found``.

        ``lines`` are already stripped of logger prefixes; later lines win.
        """

    def health_path_for(self, spec: Spec) -> str:
        """The health endpoint for this spec (the generic engine reads it from the spec)."""
        return self.health_path

    def ready_pattern_for(self, spec: Spec) -> str | None:
        return self.ready_pattern

    def chosen_from_info(self, path: str, payload: Any) -> dict[str, str]:
        """What the engine chose, from the decoded JSON of one of ``info_paths``."""
        return {}

    def version_from_info(self, path: str, payload: Any) -> str | None:
        """The engine version reported by one of ``info_paths``, when it says."""
        return None

    def profiling(self, output_dir: str) -> ProfilingEndpoints | None:
        """How to profile a running server of this engine (None: it has no endpoints)."""
        return None

    def compare_decode(
        self, spec: Spec, flags: Mapping[str, FlagValue], metrics: Mapping[str, Any]
    ) -> DecodeComparison | None:
        """For an engine without profiling endpoints, a trial's decode compared another way
        (``flags`` its configuration, ``metrics`` what its benchmark measured); None: this
        engine is profiled through :meth:`profiling`, or not at all."""
        return None

    def is_fatal(self, line: str) -> bool:
        from bringup.diagnose import fatal_line

        return fatal_line(line, engine=self.name)

    def shell_command(self, argv: list[str]) -> str:
        return shlex.join(argv)
