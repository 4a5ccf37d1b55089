"""Run an example spec's whole sweep against the simulated engine, and read the world's truth.

:func:`sweep_example` loads ``examples/<name>.toml``, points the engine at
``python -m bringup.testing.simengine`` (``engine.binary``, or the command template of the
``command`` engine) with a world through ``BRINGUP_SIM_WORLD``, shrinks the benchmark and
the accuracy prompts so a trial takes about a second, and runs the real sweep (planner,
trial runner, readiness, checks, benchmark, store). :func:`world_verdict` says what a
correct gauntlet must conclude for one configuration, from the world alone.

The world is copied with time compressed: simulated start-up and crash delays through
``BRINGUP_SIM_SPEED``, and its token timing (real in the simulated engine) scaled by one
factor, so throughput and TTFT keep their ratios between configurations.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import bringup.trial as trial_mod
import bringup.trial_checks as trial_checks_mod
from bringup.checks.accuracy import DEFAULT_MAX_LOGPROB_MAD, DEFAULT_MIN_TOKEN_AGREEMENT
from bringup.contention import Contention, ContentionMeter
from bringup.spec import Config, Spec, load_spec
from bringup.store import Store
from bringup.sweep import SweepOptions, SweepOutcome, prepare, run_sweep
from bringup.testing.simengine.__main__ import parse_argv
from bringup.testing.simengine.evaluate import KIND_CATEGORY, load_category
from bringup.testing.simengine.world import World, load_world
from bringup.verdict import Category, Stage, TrialResult

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SIM = [sys.executable, "-m", "bringup.testing.simengine"]
TRTLLM_SHIM = Path(__file__).with_name("trtllm_yaml_shim.py")
STARTUP_REAL_S = 0.3  # a healthy simulated start-up, in real seconds
REFERENCE_TTFT_MS = 10.0  # the world's reference TTFT after scaling
REFERENCE_TOK_S = 200.0  # the world's reference throughput after scaling

# where bringup records each kind of failure: a crash or hang before /health says ready
_KIND_STAGE = {
    "crash": Stage.READY,
    "hang": Stage.READY,
    "garbage": Stage.CORRECT,
    "wrong_answer": Stage.CORRECT,
    "drift": Stage.ACCURATE,
    "load_errors": Stage.BENCHMARKED,
}


@dataclass
class Truth:
    """What the world says one configuration does."""

    category: Category | None  # None: it works
    stage: Stage | None
    output_tok_s: float  # the world's throughput for it at the top level (when it works)


@dataclass
class SimSweep:
    spec: Spec
    world: World
    outcome: SweepOutcome
    store: Store
    elapsed_s: float

    def trial(self, **flags: Any) -> TrialResult:
        """The first trial of the one configuration whose flags include ``flags`` (keys
        without dashes: ``kv_cache_dtype``); a re-measured configuration counts once."""
        want = {_flag(k, self.spec): v for k, v in flags.items()}
        found = [
            r for r in self.outcome.results if all(r.flags.get(k) == v for k, v in want.items())
        ]
        configs = {json.dumps(r.flags, sort_keys=True) for r in found}
        assert len(configs) == 1, f"{len(configs)} configurations match {want}: {sorted(configs)}"
        return found[0]

    def first(self, **flags: Any) -> TrialResult:
        """The first trial whose flags include ``flags``, of whichever configuration (a
        failure that named nothing is tried again in another context before it prunes
        the value alone)."""
        want = {_flag(k, self.spec): v for k, v in flags.items()}
        found = [
            r for r in self.outcome.results if all(r.flags.get(k) == v for k, v in want.items())
        ]
        assert found, f"no trial matches {want}"
        return found[0]

    def truth(self, config: Config) -> Truth:
        return world_verdict(self.world, self.spec, config)


def _flag(key: str, spec: Spec) -> str:
    for flag in spec.space:
        if flag.lstrip("-").replace("-", "_").replace(".", "_") == key:
            return flag
    raise KeyError(f"{key} names no axis of {list(spec.space)}")


def engine_flags(spec: Spec, config: Config) -> dict[str, Any]:
    """What the engine's command line holds: the launch args, then the trial's flags."""
    flags, _ = parse_argv(list(spec.launch.args))
    flags.update({k: v for k, v in config.items() if v is not False})
    return flags


def world_verdict(world: World, spec: Spec, config: Config) -> Truth:
    flags = engine_flags(spec, config)
    levels = list(spec.bench.concurrency)
    tput = world.true_output_tok_s(flags, max(levels))
    rule = world.first_outcome(flags)
    if rule is not None and rule.kind == "drift":
        # a drift leaves the known answers right (the simulated engine changes only the
        # free continuation): the differential accuracy check decides
        max_mad = spec.checks.max_logprob_mad or DEFAULT_MAX_LOGPROB_MAD
        min_agree = spec.checks.min_token_agreement or DEFAULT_MIN_TOKEN_AGREEMENT
        if rule.logprob_drift <= max_mad and rule.token_agreement >= min_agree:
            rule = None  # drifts within tolerance: it works with one stream
    if rule is not None:
        category = rule.category or KIND_CATEGORY.get(rule.kind)
        return Truth(category, rule.stage or _KIND_STAGE[rule.kind], tput)
    under_load = world.load_outcome(flags, levels)
    if under_load is None:
        return Truth(None, None, tput)
    return Truth(load_category(world, under_load[0]), Stage.BENCHMARKED, tput)


def fast_world(name: str, out: Path) -> tuple[World, Path, float]:
    """The world with its token timing scaled; also its file and the speed to run it at."""
    world = load_world(name)
    perf = world.performance
    perf.ttft_p50_ms = REFERENCE_TTFT_MS  # effects are factors: the ratios stay
    perf.output_tok_s = REFERENCE_TOK_S
    path = out / f"{world.world.name}.json"
    path.write_text(world.model_dump_json(), encoding="utf-8")
    return world, path, world.timing.startup_s / STARTUP_REAL_S


def shrink(spec: Spec) -> None:
    """A short benchmark and fewer accuracy prompts; the example's own known answers (the
    built-in suite, which the simulated engine answers like a healthy model).

    Every stage still runs; a healthy trial takes about a second.
    """
    spec.bench.concurrency = [1, 4]
    spec.bench.request_rate = []
    spec.bench.input_tokens = 32
    spec.bench.output_tokens = 16
    spec.bench.requests = 8
    spec.bench.warmup = 1
    spec.bench.duration_s = None
    spec.bench.repeats = 1
    spec.checks.accuracy_prompts = 4
    spec.checks.accuracy_tokens = 16
    spec.launch.stop_grace_s = 5.0


def example_spec(example: str, world_name: str, tmp: Path) -> tuple[Spec, World]:
    """The example spec wired to the simulated engine running ``world_name``."""
    spec = load_spec(EXAMPLES / f"{example}.toml")
    world, world_file, speed = fast_world(world_name, tmp)
    if spec.engine.name == "command":
        assert spec.engine.command, "the command example names its server's command line"
        spec.engine.command = [*SIM, *spec.engine.command[1:]]
    elif spec.engine.name == "trtllm":
        spec.engine.binary = f"{sys.executable} {TRTLLM_SHIM}"
    else:
        spec.engine.binary = " ".join(SIM)
    spec.engine.env.update(BRINGUP_SIM_WORLD=str(world_file), BRINGUP_SIM_SPEED=f"{speed:g}")
    shrink(spec)
    return spec, world


def sweep_example(
    example: str,
    world_name: str,
    tmp: Path,
    edit: Callable[[Spec], None] | None = None,
    store: Store | None = None,
) -> SimSweep:
    """Run the example's sweep to the end (``edit`` may change the spec first)."""
    spec, world = example_spec(example, world_name, tmp)
    if edit is not None:
        edit(spec)
    store = store or Store(tmp / "bringup.db")
    loop = asyncio.new_event_loop()
    try:
        started = loop.time()
        outcome = loop.run_until_complete(
            run_sweep(prepare(spec), store, SweepOptions(runs_dir=str(tmp / "runs")))
        )
        elapsed = loop.time() - started
    finally:
        loop.close()
    return SimSweep(spec, world, outcome, store, elapsed)


class _QuietMeter:
    """The simulated engine's speed is timed sleeps, not CPU work: other processes' CPU
    does not slow it, so its measurements are compared as taken (no contention widening)."""

    def __init__(self, window: str) -> None:
        self.inner = ContentionMeter.start(window)

    @classmethod
    def start(cls, window: str) -> _QuietMeter:
        return cls(window)

    def stop(self) -> Contention:
        measured = self.inner.stop()
        return measured.model_copy(update={"others_cpu_s": 0.0, "steal_s": 0.0})


@pytest.fixture(scope="session", autouse=True)
def _sim_speed_ignores_contention() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trial_mod, "ContentionMeter", _QuietMeter)  # the trial's window
        mp.setattr(trial_checks_mod, "ContentionMeter", _QuietMeter)  # the benchmark's
        yield
