"""Load and validate a spec file (TOML).

The spec names the engine, the model, the fixed launch flags, the searched space, the
conservative reference configuration, the benchmark and the objective. Flag names are the
engine's own. Errors name the file, the line and the field.

The configurations searched are the product of the ``[space]`` axes, then each explicit
``[[candidates]]`` flag set not already among them (either may be absent); ``[plan].exclude``
is applied to both by every planner (:class:`bringup.plan.space.SearchSpace`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bringup.errors import SpecError
from bringup.flagvalue import Config as Config
from bringup.flagvalue import FlagValue as FlagValue

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_env_names(env: dict[str, str]) -> dict[str, str]:
    """Names reach execve and every deployment format bare: only portable names pass."""
    for name in env:
        if not ENV_NAME.fullmatch(name):
            raise ValueError(
                f"environment variable name {name!r} is not valid (letters, digits and "
                "underscores, not starting with a digit)"
            )
    return env


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EngineSpec(_Section):
    name: str
    binary: str | None = None  # executable, or a prefix: "python -m sglang.launch_server"
    env: dict[str, str] = Field(default_factory=dict)
    gpus: list[int] | None = None  # CUDA_VISIBLE_DEVICES for the engine; None leaves it alone
    help_file: str | None = None  # the engine's --help saved on the target, for offline checks
    command: list[str] | None = None  # engine "command": argv with {model} {host} {port} {name}
    health_path: str | None = None  # engine "command": its health endpoint (default /health)
    ready_pattern: str | None = None  # engine "command": regex of the log line marking readiness

    _env_names = field_validator("env")(_check_env_names)

    @field_validator("ready_pattern")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc})") from None
        return value


class ModelSpec(_Section):
    path: str | None = None  # local file/dir or a hub id, as the engine takes it
    builtin: str | None = None  # a model bringup can install itself (e.g. "gemma3-270m")
    name: str | None = None  # served model name, if the engine needs one

    def model_post_init(self, __context: Any) -> None:
        if not self.path and not self.builtin:
            raise ValueError("set model.path (or model.builtin)")


class LaunchSpec(_Section):
    args: list[str] = Field(default_factory=list)
    host: str = "127.0.0.1"
    port: int | None = Field(default=None, ge=1, le=65535)  # None: bringup picks a free one
    start_timeout_s: float = Field(default=300.0, gt=0)
    hang_timeout_s: float = Field(default=120.0, gt=0)  # no new log output for this long
    stop_grace_s: float = Field(default=10.0, ge=0)
    env: dict[str, str] = Field(default_factory=dict)

    _env_names = field_validator("env")(_check_env_names)


class BenchSpec(_Section):
    concurrency: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [1])
    input_tokens: int = Field(default=128, ge=1)
    output_tokens: int = Field(default=64, ge=1)
    requests: int = Field(default=4, ge=1)  # per concurrency level
    warmup: int = Field(default=1, ge=0)
    duration_s: float | None = Field(default=None, gt=0)
    repeats: int = Field(default=1, ge=1)
    request_rate: list[Annotated[float, Field(gt=0)]] = Field(default_factory=list)  # req/s
    arrival: Literal["poisson", "constant"] = "poisson"
    endpoint: Literal["completions", "chat"] = "completions"


def _check_metric(name: str) -> None:
    """A metric the benchmark never records would pass every trial, then pick no winner."""
    from bringup.bench.report import is_metric

    if not is_metric(name):
        raise ValueError(
            f"{name!r} is not a metric bringup measures; use e.g. output_tok_s, ttft_p99_ms, "
            "e2e_p99_ms or decode_tok_s_single (c4.output_tok_s for one concurrency level)"
        )


class ObjectiveSpec(_Section):
    maximize: str = "output_tok_s"
    minimize: str | None = None
    require: list[str] = Field(default_factory=list)

    @field_validator("require")
    @classmethod
    def _check_require(cls, v: list[str]) -> list[str]:
        for item in v:
            m = re.fullmatch(r"\s*([a-z0-9_.]+)\s*(<=|>=|<|>)\s*[-+0-9.eE]+\s*", item)
            if not m:
                raise ValueError(
                    f"cannot read requirement {item!r}; write e.g. 'ttft_p99_ms < 2000'"
                )
            _check_metric(m.group(1))
        return v

    @field_validator("maximize", "minimize")
    @classmethod
    def _check_metrics(cls, v: str | None) -> str | None:
        if v is not None:
            _check_metric(v)
        return v


class ChecksSpec(_Section):
    known_answers: bool = True
    suite_file: str | None = None
    extra: list[dict[str, Any]] = Field(default_factory=list)
    accuracy: bool = True
    accuracy_prompts: int = Field(default=16, ge=1)
    accuracy_tokens: int = Field(default=32, ge=1)
    max_logprob_mad: float | None = None  # None: the measured default
    min_token_agreement: float | None = None
    max_garbage_share: float | None = Field(default=None, ge=0, le=1)  # None: the default
    # measure more: the reference answers this many prompts, so an inconclusive candidate
    # can be asked more of them (None: twice accuracy_prompts)
    accuracy_max_prompts: int | None = Field(default=None, ge=1)
    tolerate: list[str] = Field(default_factory=list)  # flags whose drift is accepted
    # flags that cannot change greedy output (a sampling seed): a trial that changes only
    # these is a relaunch of the reference, whose drift is the noise floor (report.tradeoff)
    controls: list[str] = Field(default_factory=list)
    # the accuracy prompts again at the benchmark's top concurrency, paired with the
    # reference under the same load, judged against a control's floor (checks.paired_load)
    paired_load: bool = False
    # the long-context probe (checks.long_context): on where a per-slot context is known
    long_context: bool = True
    context_tokens: int | None = Field(default=None, ge=64)  # one request must fit this
    long_context_max_tokens: int = Field(default=4096, ge=64)  # cost cap without the above


class ResourcesSpec(_Section):
    """What one trial needs where it runs (read by executors that place trials: ray)."""

    # accelerators per trial; unset: what the engine's parallelism flags occupy (read by
    # its adapter) where above one, else one where the cluster has the resource, else none
    gpus: float | None = Field(default=None, ge=0)
    resource: str = "GPU"  # Ray's GPU resource; a custom one stands in for GPUs in tests
    gpu_type: str | None = None  # Ray accelerator_type, e.g. "H100": place only there
    cpus: float = Field(default=1.0, gt=0)
    # trials side by side on one device (local max_in_flight > 1, or other bringup sweeps
    # on the same GPU): one starts while another is measured; start-ups, checks with
    # benchmarks, and memory releases each take turns (server.devicelock). None: on when
    # the local executor runs more than one
    shared_device: bool | None = None
    lock_dir: str | None = None  # where the turns' lock files live; shared by every sweep


class PlanSpec(_Section):
    planner: str = "default"
    executor: Literal["local", "ray"] = "local"
    address: str | None = None  # the Ray cluster (else RAY_ADDRESS, else a local one)
    # trials at once; local: 1 unless set (see resources.shared_device), ray: what fits
    max_in_flight: int | None = Field(default=None, ge=1)
    max_trials: int | None = Field(default=None, ge=1)
    max_wall_s: float | None = Field(default=None, gt=0)
    repeat_top: int = Field(default=0, ge=0)
    # full measurements of one configuration the default planner takes at most while its
    # lead is undecided (1: never measure again)
    max_samples: int = Field(default=10, ge=1)
    # repeats the default planner launches at most to decide the winner (beyond
    # repeat_top's); unset: 15% of the space's configurations, at least 2 * max_samples
    max_repeats: int | None = Field(default=None, ge=0)
    halving: bool = False
    order: dict[str, list[FlagValue]] = Field(default_factory=dict)  # maturity order per flag
    memory_order: dict[str, list[FlagValue]] = Field(default_factory=dict)  # least hungry first
    exclude: list[dict[str, FlagValue]] = Field(default_factory=list)


class Spec(_Section):
    engine: EngineSpec
    model: ModelSpec
    launch: LaunchSpec = Field(default_factory=LaunchSpec)
    space: dict[str, list[FlagValue]] = Field(default_factory=dict)
    candidates: list[Config] = Field(default_factory=list)  # explicit flag sets, [[candidates]]
    reference: Config = Field(default_factory=dict)
    bench: BenchSpec = Field(default_factory=BenchSpec)
    objective: ObjectiveSpec = Field(default_factory=ObjectiveSpec)
    checks: ChecksSpec = Field(default_factory=ChecksSpec)
    plan: PlanSpec = Field(default_factory=PlanSpec)
    resources: ResourcesSpec = Field(default_factory=ResourcesSpec)
    name: str | None = None

    source: str | None = Field(default=None, exclude=True)
    source_text: str | None = Field(default=None, exclude=True, repr=False)

    @field_validator("space")
    @classmethod
    def _check_space(cls, v: dict[str, list[FlagValue]]) -> dict[str, list[FlagValue]]:
        for flag, values in v.items():
            if not flag.startswith("-"):
                raise ValueError(f"space key {flag!r} must be an engine flag such as '--{flag}'")
            if not values:
                raise ValueError(f"space[{flag!r}] has no values")
        return v

    @field_validator("candidates")
    @classmethod
    def _check_candidates(cls, v: list[Config]) -> list[Config]:
        for i, flags in enumerate(v):
            for flag in flags:
                if not flag.startswith("-"):
                    raise ValueError(
                        f"candidates[{i}] key {flag!r} must be an engine flag such as '--{flag}'"
                    )
        return v

    def configs(self) -> list[Config]:
        """Every combination of the space in spec order (the grid), then each listed
        candidate set that is not one of them; exclusions are the planner's to apply."""
        keys = list(self.space)
        grid = [
            dict(zip(keys, combo, strict=True)) for combo in itertools.product(*self.space.values())
        ]
        if self.candidates and not self.space:
            grid = []  # the empty product is one empty configuration: not a listed one
        seen = {_identity(c) for c in grid}
        for flags in self.candidates:
            if _identity(flags) not in seen:
                seen.add(_identity(flags))
                grid.append(dict(flags))
        return grid

    def axes(self) -> dict[str, list[FlagValue]]:
        """Each searched flag with its values: the ``[space]`` axes, then the values the
        ``[[candidates]]`` sets give (flags only candidates name come after the axes)."""
        out = {flag: list(values) for flag, values in self.space.items()}
        for flags in self.candidates:
            for flag, value in flags.items():
                values = out.setdefault(flag, [])
                if not any(_identity({flag: v}) == _identity({flag: value}) for v in values):
                    values.append(value)
        return out

    def reference_config(self) -> Config:
        """The reference completed with each axis's first value where it names none."""
        ref = {k: v[0] for k, v in self.space.items()}
        ref.update(self.reference)
        return ref

    def public_json(self) -> str:
        """The spec as JSON with secret values (API keys, tokens) masked, for the store."""
        from bringup.secrets import MASK, is_secret_name, redact_argv, redact_env, redact_flags

        data = self.model_dump(mode="json", exclude={"source", "source_text"})
        data["engine"]["env"] = redact_env(self.engine.env)
        data["launch"]["env"] = redact_env(self.launch.env)
        data["launch"]["args"] = redact_argv(self.launch.args)
        # a secret-named flag searched in [space] (or pinned anywhere) keeps its name only
        for section, key in (("space", None), ("plan", "order"), ("plan", "memory_order")):
            axes = data[section] if key is None else data[section][key]
            for flag, values in axes.items():
                if is_secret_name(flag):
                    axes[flag] = [MASK] * len(values)
        data["reference"] = redact_flags(data["reference"])
        data["candidates"] = [redact_flags(c) for c in data["candidates"]]
        data["plan"]["exclude"] = [redact_flags(e) for e in data["plan"]["exclude"]]
        return json.dumps(data)

    def secret_values(self) -> list[str]:
        """Every secret value the spec holds (env, fixed args, searched flags): to redact."""
        from bringup.secrets import flag_secret_values, secret_values

        found = secret_values(self.launch.args, self.engine.env | self.launch.env)
        for flag, values in self.axes().items():
            for value in values:
                found += flag_secret_values({flag: value})
        return found + flag_secret_values(self.reference)

    def digest(self) -> str:
        payload = self.model_dump_json(exclude={"source", "source_text"})
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _identity(config: Config) -> tuple[tuple[str, str], ...]:
    """Order-free identity of a flag set by its values' text (``8`` and ``8.0`` agree); the
    planners' own is :func:`bringup.plan.space.flags_key`, which this matches."""
    from bringup.plan.space import flags_key

    return flags_key(config)


def _line_of(text: str, loc: tuple[int | str, ...]) -> int | None:
    """Best-effort line number of a field in TOML source (tomllib keeps none)."""
    if not loc:
        return None
    lines = text.splitlines()
    table, key = str(loc[0]), str(loc[1]) if len(loc) > 1 else None
    start = 0
    header = re.compile(rf"^\s*\[\s*{re.escape(table)}\s*\]")
    for i, line in enumerate(lines):
        if header.match(line):
            start = i
            if key is None:
                return i + 1
            break
    else:
        key = table
    keypat = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for i in range(start, len(lines)):
        if keypat.match(lines[i]):
            return i + 1
    return start + 1 if start else None


def _expand(value: str, base: Path) -> str:
    expanded = os.path.expanduser(os.path.expandvars(value))
    p = Path(expanded)
    if not p.is_absolute() and (base / p).exists():
        return str((base / p).resolve())
    return expanded


def parse_spec(text: str, source: str = "<spec>") -> Spec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: not valid TOML ({exc}); fix the syntax there.") from exc
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        field = ".".join(str(p) for p in loc) or "(top level)"
        line = _line_of(text, loc)
        where = f"{source}:{line}" if line else source
        msg = err["msg"].removeprefix("Value error, ")
        raise SpecError(f"{where}: field '{field}': {msg}.") from exc
    spec.source = source
    spec.source_text = text
    return spec


def load_spec(path: str | Path) -> Spec:
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"spec file {p} does not exist; pass the path of a TOML spec.")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"{p} is not UTF-8 text (byte {exc.start} is not valid); save the spec as UTF-8."
        ) from exc
    except OSError as exc:
        raise SpecError(f"cannot read the spec file {p} ({exc.strerror}); check its path.") from exc
    spec = parse_spec(text, source=str(p))
    if spec.model.path:
        spec.model.path = _expand(spec.model.path, p.parent.resolve())
    return spec


def parse_set(items: list[str] | tuple[str, ...]) -> Config:
    """``--set FLAG=VALUE`` items into a config; a bare ``FLAG`` means a boolean switch."""
    out: Config = {}
    for item in items:
        flag, sep, raw = item.partition("=")
        if not flag.startswith("-"):
            raise SpecError(f"--set {item!r}: the flag must start with '-', e.g. --set -fa=on.")
        out[flag] = _coerce(raw) if sep else True
    return out


def _coerce(raw: str) -> FlagValue:
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    return raw
