"""World files: how a simulated engine behaves on some simulated hardware.

A world (TOML or JSON, documented in ``docs/worlds.md``) names the engine it imitates, the
searched space with its reference, the performance surface (a base throughput and latency
times per-value and per-combination factors, plus measurement noise, which a combination
may raise for the configurations holding it), and ``outcome``
rules: the first rule whose ``when`` matches a configuration (and whose ``unless`` does
not) decides that it crashes, hangs, answers garbage, drifts or errors under load.

Load: a rule or an interaction with ``min_concurrency`` N holds only while at least N
requests are in flight (a configuration that serves one stream but runs out of memory,
crashes, answers garbage, stalls or errors at 16; a KV cache too small to keep scaling).
At each load the first rule that holds then decides: a trial is checked with one request
at a time (where a load rule does not hold) and benchmarked at its ``[bench]``
concurrency levels, lowest first, so a load rule fails it at the benchmark stage, at the
first level that reaches N, unless a rule before it already failed the trial. The
world's ``bench`` table is a spec's ``[bench]``; its top level is the one the throughput
figures are read at (one stream where none is given).

Conditions compare flag values by text or number; a list means any of; ``">=0.9"``,
``"<8"``, ``"!=auto"`` compare; a flag absent from the command line has the value false.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from bringup.errors import SpecError
from bringup.flagvalue import Config, FlagValue
from bringup.verdict import Category, Stage

if TYPE_CHECKING:
    from bringup.spec import Spec

Condition = dict[str, FlagValue | list[FlagValue]]
OutcomeKind = Literal["crash", "hang", "garbage", "wrong_answer", "drift", "load_errors"]
# what a rule that holds only under load may do (a drift under load is seen only by the
# paired-load check, which the simulation does not model)
LOAD_KINDS: tuple[OutcomeKind, ...] = ("crash", "hang", "garbage", "wrong_answer", "load_errors")
WORLDS_DIR = Path(__file__).parent / "worlds"


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorldInfo(_M):
    name: str
    engine: str = "sglang"  # an engine with a simulated profile, or "generic"
    engine_version: str = "unknown"
    hardware: str = "unknown"
    model: str = "sim-model"  # the id served under /v1/models
    description: str = ""

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str) -> str:
        from bringup.testing.simengine.profile import imitates, simulated_engines

        if not imitates(value):
            known = ", ".join(simulated_engines())
            raise ValueError(f"the simulated engine imitates {known}, not {value!r}")
        return value


class Timing(_M):
    """Simulated seconds of a trial's phases."""

    startup_s: float = Field(default=60.0, ge=0)  # launch to ready when healthy
    listen_s: float | None = Field(default=None, ge=0)  # sglang: port opens here (503 after)
    check_s: float = Field(default=20.0, ge=0)  # identity + correctness + accuracy checks
    bench_s: float = Field(default=120.0, ge=0)  # the full benchmark
    teardown_s: float = Field(default=5.0, ge=0)
    start_timeout_s: float = Field(default=600.0, gt=0)  # what a hang costs
    reject_s: float = Field(default=2.0, ge=0)  # argument parsing failure


class Interaction(_M):
    when: Condition
    unless: Condition = Field(default_factory=dict)
    output_tok_s: float = Field(default=1.0, gt=0)  # multiplies throughput
    ttft_ms: float = Field(default=1.0, gt=0)  # multiplies time to first token
    # the relative sd of one full benchmark where the condition holds (None: the world's);
    # where several hold, the largest counts
    noise: float | None = Field(default=None, ge=0)
    # the factors hold only at loads of at least this many streams (noise holds always)
    min_concurrency: int | None = Field(default=None, ge=2)

    def holds(self, config: dict[str, Any], streams: int) -> bool:
        return streams >= (self.min_concurrency or 1) and applies(config, self.when, self.unless)


class Performance(_M):
    output_tok_s: float = Field(default=1000.0, gt=0)  # the reference configuration's
    ttft_p50_ms: float = Field(default=200.0, gt=0)
    ttft_tail: float = Field(default=1.8, ge=1)  # p99 / p50
    noise: float = Field(default=0.02, ge=0)  # relative sd of one full benchmark
    effects: dict[str, dict[str, float]] = Field(default_factory=dict)  # flag -> value -> x
    ttft_effects: dict[str, dict[str, float]] = Field(default_factory=dict)
    interactions: list[Interaction] = Field(default_factory=list)


class Outcome(_M):
    when: Condition
    unless: Condition = Field(default_factory=dict)
    kind: OutcomeKind = "crash"
    category: Category | None = None  # the verdict a correct diagnosis reaches
    stage: Stage | None = None
    exit_code: int = 1
    after_s: float = Field(default=20.0, ge=0)  # crash: seconds after launch
    log: str = ""  # printed before the crash or hang (a real engine excerpt)
    corpus_id: str | None = None  # or: take the log from the failure corpus
    text: str = "!!!!!!!!!!!!!!!!"  # garbage / wrong_answer: what the model says
    logprob_drift: float = Field(default=0.0, ge=0)  # drift: mean |delta logprob|
    token_agreement: float = Field(default=1.0, ge=0, le=1)
    error_rate: float = Field(default=0.0, ge=0, le=1)  # load_errors: share of failed requests
    # the rule holds only while this many requests are in flight (see the module docstring)
    min_concurrency: int | None = Field(default=None, ge=2)

    @field_validator("min_concurrency")
    @classmethod
    def _load_kind(cls, value: int | None, info: ValidationInfo) -> int | None:
        kind = info.data.get("kind")
        if value is not None and kind is not None and kind not in LOAD_KINDS:
            raise ValueError(
                f"a {kind} outcome cannot be conditioned on load; under load a rule may be "
                f"{', '.join(LOAD_KINDS)}"
            )
        stage = info.data.get("stage")
        if value is not None and stage is not None and stage is not Stage.BENCHMARKED:
            raise ValueError(
                f"a rule that holds only under load fails the benchmarked stage, not {stage.value}"
            )
        return value

    def holds(self, config: dict[str, Any], streams: int) -> bool:
        return streams >= (self.min_concurrency or 1) and applies(config, self.when, self.unless)


class FlagRules(_M):
    unknown: Literal["reject", "ignore"] = "reject"
    known: list[str] = Field(default_factory=list)  # accepted besides the space's flags
    removed: dict[str, str] = Field(default_factory=dict)  # flag -> the engine's error text


class Checks(_M):
    tolerate: list[str] = Field(default_factory=list)
    max_logprob_mad: float = Field(default=0.05, gt=0)
    min_token_agreement: float = Field(default=0.9, ge=0, le=1)


class World(_M):
    world: WorldInfo
    timing: Timing = Field(default_factory=Timing)
    performance: Performance = Field(default_factory=Performance)
    flags: FlagRules = Field(default_factory=FlagRules)
    space: dict[str, list[FlagValue]]
    reference: Config = Field(default_factory=dict)
    plan: dict[str, Any] = Field(default_factory=dict)  # a spec's [plan] (order, ...)
    objective: dict[str, Any] = Field(default_factory=dict)  # a spec's [objective]
    bench: dict[str, Any] = Field(default_factory=dict)  # a spec's [bench] (concurrency, ...)
    checks: Checks = Field(default_factory=Checks)
    outcome: list[Outcome] = Field(default_factory=list)
    answers: dict[str, str] = Field(default_factory=dict)  # prompt substring -> answer

    def to_spec(self) -> Spec:
        """A spec searching this world's space (engine and model as the world names them)."""
        from bringup.spec import Spec  # not loaded by the simulated engine's own process

        data: dict[str, Any] = {
            "engine": {"name": self.world.engine if self.world.engine != "generic" else "command"},
            "model": {"path": self.world.model},
            "space": self.space,
            "reference": self.reference,
            "plan": self.plan,
            "objective": self.objective,
            "bench": self.bench,
            "checks": {
                "tolerate": self.checks.tolerate,
                "max_logprob_mad": self.checks.max_logprob_mad,
                "min_token_agreement": self.checks.min_token_agreement,
            },
        }
        return Spec.model_validate(data)

    def accepts(self, flag: str) -> bool:
        return flag in self.space or flag in self.flags.known

    @field_validator("bench")
    @classmethod
    def _bench_reads(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value:
            return value
        # only a world with a [bench] table loads the spec's models
        from bringup.spec import BenchSpec

        try:
            BenchSpec.model_validate(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ValueError(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from exc
        return value

    def levels(self) -> list[int]:
        """The benchmark's concurrency levels, lowest first (``bench.concurrency``; [1])."""
        return sorted({int(c) for c in self.bench.get("concurrency") or [1]})

    def first_outcome(self, config: dict[str, Any], streams: int = 1) -> Outcome | None:
        """The rule deciding ``config`` while ``streams`` requests are in flight."""
        for rule in self.outcome:
            if rule.holds(config, streams):
                return rule
        return None

    def load_outcome(
        self, config: dict[str, Any], levels: list[int] | None = None
    ) -> tuple[Outcome, int] | None:
        """The rule that holds for ``config`` only under load, with the lowest benchmark
        level where it is the first rule to hold (``levels``: the world's); None where no
        such rule decides any level. Whether a rule already failed the trial with one
        stream (a crash at start-up, garbage, a drift beyond the limits) is the caller's
        to ask first."""
        for level in sorted(levels or self.levels()):
            rule = self.first_outcome(config, level)
            if rule is not None and rule.min_concurrency is not None:
                return rule, level
        return None

    def true_output_tok_s(self, config: dict[str, Any], streams: int | None = None) -> float:
        """Throughput while ``streams`` requests are in flight (None: the top level)."""
        perf = self.performance
        at = self.levels()[-1] if streams is None else streams
        value = perf.output_tok_s * _product(perf.effects, config)
        for inter in perf.interactions:
            if inter.holds(config, at):
                value *= inter.output_tok_s
        return value

    def noise_of(self, config: dict[str, Any]) -> float:
        """The relative sd of one full benchmark of ``config`` (see ``Interaction.noise``)."""
        noise = self.performance.noise
        for inter in self.performance.interactions:
            if inter.noise is not None and applies(config, inter.when, inter.unless):
                noise = max(noise, inter.noise)
        return noise

    def true_ttft_ms(self, config: dict[str, Any], streams: int | None = None) -> float:
        """Median TTFT while ``streams`` requests are in flight (None: the top level)."""
        perf = self.performance
        at = self.levels()[-1] if streams is None else streams
        value = perf.ttft_p50_ms * _product(perf.ttft_effects, config)
        for inter in perf.interactions:
            if inter.holds(config, at):
                value *= inter.ttft_ms
        return value


def _product(table: dict[str, dict[str, float]], config: dict[str, Any]) -> float:
    out = 1.0
    for flag, factors in table.items():
        actual = config.get(flag, False)
        for text, factor in factors.items():
            if value_matches(actual, text):
                out *= factor
                break
    return out


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def value_matches(actual: Any, expected: Any) -> bool:
    """One condition value against one flag value (see the module docstring)."""
    if isinstance(expected, list):
        return any(value_matches(actual, e) for e in expected)
    if isinstance(expected, str):
        m = re.fullmatch(r"\s*(<=|>=|!=|<|>)\s*(.+?)\s*", expected)
        if m:
            op, rhs = m.group(1), m.group(2)
            if op == "!=":
                return not value_matches(actual, rhs)
            a, b = _number(actual), _number(rhs)
            if a is None or b is None:
                return False
            return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if isinstance(expected, bool) or isinstance(actual, bool):
        return str(actual).lower() == str(expected).lower()
    a, b = _number(actual), _number(expected)
    if a is not None and b is not None:
        return a == b
    return str(actual) == str(expected)


def matches(config: dict[str, Any], condition: Condition) -> bool:
    return all(value_matches(config.get(flag, False), exp) for flag, exp in condition.items())


def applies(config: dict[str, Any], when: Condition, unless: Condition) -> bool:
    """``when`` matches and ``unless`` (when given) does not: how every world rule reads."""
    return matches(config, when) and not (unless and matches(config, unless))


def parse_world(text: str, source: str = "<world>") -> World:
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"{source}: not valid TOML or JSON ({exc}).") from exc
    try:
        return World.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise SpecError(f"{source}: field '{field}': {err['msg']}.") from exc


def load_world(path: str | Path) -> World:
    """A world from a file, or a shipped world by name (e.g. ``"sglang_sm120_qwen35"``)."""
    p = Path(path)
    if not p.is_file():
        for cand in (WORLDS_DIR / f"{path}.toml", WORLDS_DIR / f"{path}.json"):
            if cand.is_file():
                p = cand
                break
        else:
            raise SpecError(f"world file {path} does not exist; pass a TOML or JSON world.")
    return parse_world(p.read_text(encoding="utf-8"), source=str(p))


def shipped_worlds() -> list[Path]:
    return sorted(WORLDS_DIR.glob("*.toml"))
