"""The analytic evaluator: a world and a configuration -> the trial's verdict and its cost.

What a full bringup trial against the simulated engine would record, without launching a
process: the verdict (category, stage, evidence as the diagnosis would quote it), the
benchmark metrics with measurement noise, and the simulated seconds the trial took.
A rule that holds only under load (``min_concurrency``) fails the benchmark stage at the
first of the world's ``[bench]`` levels that reaches it, as the benchmark's own checks
would: a crash (the engine died while serving: the log's category), a stall
(``startup_timeout_or_hang``: /health 200 with the engine idle), garbage, wrong answers
or errors under load. A world of several levels also gets per-level figures
(``c4.output_tok_s``) beside the top level's headline.
Planners are compared on it (``bench/search_efficiency.py``).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from bringup import diagnose
from bringup.student import t95
from bringup.testing.simengine.profile import profile_for
from bringup.testing.simengine.world import Outcome, World
from bringup.verdict import Category, Stage, Status, TrialResult

CORPUS = Path("/work/shared/corpus/failure_logs.jsonl")

# the verdict category each kind of simulated misbehaviour stands for
KIND_CATEGORY = {
    "hang": Category.STARTUP_TIMEOUT_OR_HANG,
    "garbage": Category.GARBAGE_OUTPUT,
    "wrong_answer": Category.WRONG_ANSWER,
    "drift": Category.ACCURACY_REGRESSION,
    "load_errors": Category.ERRORS_UNDER_LOAD,
}
_KIND_STAGE = {
    "crash": Stage.LAUNCHING,
    "hang": Stage.LAUNCHING,
    "garbage": Stage.CORRECT,
    "wrong_answer": Stage.CORRECT,
    "drift": Stage.ACCURATE,
    "load_errors": Stage.BENCHMARKED,
}


@dataclass
class SimTrial:
    result: TrialResult
    seconds: float  # simulated wall time of the trial
    launched: bool  # False when the engine refused its arguments before starting


@cache
def corpus_log(corpus_id: str) -> str:
    """The log excerpt of one failure-corpus entry ('' when the corpus is not here)."""
    if not CORPUS.is_file():
        return ""
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            if entry.get("id") == corpus_id:
                return str(entry.get("log", ""))
    return ""


def outcome_log(outcome: Outcome) -> str:
    return outcome.log or (corpus_log(outcome.corpus_id) if outcome.corpus_id else "")


def unknown_flag_error(world: World, config: dict[str, Any]) -> tuple[str, int] | None:
    """The engine's own rejection of a flag it does not know (text, exit code), if any."""
    for flag, value in config.items():
        if value is False:
            continue
        if flag in world.flags.removed:
            return world.flags.removed[flag], 2
        if not world.accepts(flag) and world.flags.unknown == "reject":
            return rejection_text(world, flag), profile_for(world.world.engine).reject_exit
    return None


def rejection_text(world: World, flag: str) -> str:
    return profile_for(world.world.engine).reject.format(flag=flag)


def _evidence(log: str, category: Category, engine: str) -> list[str]:
    diag = diagnose.classify(log, engine=engine, learned=False)  # a trial's log: rules alone
    return _evidence_of(diag, log, category)


def _evidence_of(diag: diagnose.Diagnosis, log: str, category: Category) -> list[str]:
    """The diagnosis' evidence where it names ``category``, else the log's last lines."""
    if diag.category is category and diag.evidence:
        return diag.evidence
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return lines[-3:]


def evaluate(
    world: World,
    config: dict[str, Any],
    rng: random.Random,
    bench_scale: float = 1.0,
    trial_id: str = "sim",
    repeats: int = 1,
) -> SimTrial:
    """Simulate one trial of ``config``; noise is drawn from ``rng``.

    With ``repeats`` > 1 the benchmark runs that many times inside the trial and the
    result carries ``output_tok_s_ci_lo`` and ``_ci_hi`` (a t-interval of the mean), as a real
    bench does.
    """
    t = world.timing
    result = TrialResult(trial_id=trial_id, flags=dict(config))
    engine = world.world.engine
    rejected = unknown_flag_error(world, config)
    if rejected is not None:
        text, _code = rejected
        result.fail(
            Stage.LAUNCHING,
            Category.INVALID_CONFIG,
            _evidence(text, Category.INVALID_CONFIG, engine),
        )
        return SimTrial(result, t.reject_s, launched=False)
    outcome = world.first_outcome(config)
    healthy_s = t.startup_s + t.check_s + t.bench_s * bench_scale + t.teardown_s
    if outcome is not None:
        failed = _apply_outcome(world, outcome, config, result)
        if failed is not None:
            return SimTrial(result, failed, launched=True)
    under_load = world.load_outcome(config)
    if under_load is not None:
        seconds = _apply_load_outcome(world, *under_load, result, bench_scale)
        return SimTrial(result, seconds, launched=True)
    noise = world.noise_of(config) / math.sqrt(max(bench_scale, 1e-3))
    true_tput = world.true_output_tok_s(config)
    draws = [true_tput * max(0.05, 1 + rng.gauss(0, noise)) for _ in range(max(1, repeats))]
    tput = sum(draws) / len(draws)
    ttft = world.true_ttft_ms(config) * max(0.05, 1 + rng.gauss(0, noise))
    result.status = Status.PASSED
    result.stage = Stage.PASSED
    result.metrics = {
        "output_tok_s": tput,
        "ttft_p50_ms": ttft,
        "ttft_p99_ms": ttft * world.performance.ttft_tail,
        "bench_scale": bench_scale,
    }
    levels = world.levels()
    if len(levels) > 1:  # drawn after the headline: a one-level world's draws are unchanged
        for level in levels:
            at = (
                (tput, ttft)
                if level == levels[-1]
                else (
                    world.true_output_tok_s(config, level) * max(0.05, 1 + rng.gauss(0, noise)),
                    world.true_ttft_ms(config, level) * max(0.05, 1 + rng.gauss(0, noise)),
                )
            )
            result.metrics[f"c{level}.output_tok_s"] = at[0]
            result.metrics[f"c{level}.ttft_p50_ms"] = at[1]
            result.metrics[f"c{level}.ttft_p99_ms"] = at[1] * world.performance.ttft_tail
    if len(draws) > 1:
        sd = math.sqrt(sum((d - tput) ** 2 for d in draws) / (len(draws) - 1))
        half = t95(len(draws) - 1) * sd / math.sqrt(len(draws))
        result.metrics["output_tok_s_ci_lo"] = tput - half
        result.metrics["output_tok_s_ci_hi"] = tput + half
        result.metrics["output_tok_s_ci_n"] = len(draws)
    healthy_s += t.bench_s * bench_scale * (len(draws) - 1)
    result.timings = {"total": healthy_s}
    return SimTrial(result, healthy_s, launched=True)


def _apply_outcome(
    world: World, outcome: Outcome, config: dict[str, Any], result: TrialResult
) -> float | None:
    """Fail ``result`` as the outcome says; the simulated seconds, or None if it passes."""
    t = world.timing
    engine = world.world.engine
    checked_s = t.startup_s + t.check_s + t.teardown_s
    stage = outcome.stage or _KIND_STAGE[outcome.kind]
    if outcome.kind == "crash":
        log = outcome_log(outcome)
        diag = diagnose.classify(log, engine=engine, exit_code=outcome.exit_code, learned=False)
        category = outcome.category or diag.category
        result.fail(
            stage,
            category,
            _evidence_of(diag, log, category),
            detail=f"process exited with code {outcome.exit_code}",
        )
        if result.failure is not None and diag.category is category:
            # the deciding rule, as a real trial's failure carries it: what tells two causes
            # of one category apart
            result.failure.rule = diag.rule
        seconds = outcome.after_s + t.teardown_s
    elif outcome.kind == "hang":
        log = outcome_log(outcome)
        lines = [ln.strip() for ln in log.splitlines() if ln.strip()][-3:]
        result.fail(
            stage,
            outcome.category or Category.STARTUP_TIMEOUT_OR_HANG,
            lines,
            detail=f"not ready after {t.start_timeout_s:g} s",
        )
        seconds = t.start_timeout_s + t.teardown_s
    elif outcome.kind in ("garbage", "wrong_answer"):
        result.fail(
            stage,
            outcome.category or KIND_CATEGORY[outcome.kind],
            [f"answer: {outcome.text[:60]!r}"],
        )
        seconds = checked_s
    elif outcome.kind == "drift":
        blamed = [f for f in outcome.when if f not in world.checks.tolerate]
        too_far = (
            outcome.logprob_drift > world.checks.max_logprob_mad
            or outcome.token_agreement < world.checks.min_token_agreement
        )
        if not blamed or not too_far:
            result.checks["logprob_mad"] = outcome.logprob_drift
            return None
        result.fail(
            stage,
            outcome.category or Category.ACCURACY_REGRESSION,
            [
                f"mean |delta logprob| {outcome.logprob_drift:.3f} vs reference "
                f"(limit {world.checks.max_logprob_mad:.3f}); "
                f"token agreement {outcome.token_agreement:.2f}"
            ],
        )
        seconds = checked_s
    else:
        result.fail(
            stage,
            outcome.category or Category.ERRORS_UNDER_LOAD,
            [f"{outcome.error_rate:.0%} of requests failed under load (HTTP 500)"],
        )
        seconds = checked_s + t.bench_s
    result.timings = {"total": seconds}
    return seconds


def load_category(world: World, outcome: Outcome) -> Category:
    """The verdict the benchmark stage reaches for a rule that holds only under load."""
    if outcome.category is not None:
        return outcome.category
    if outcome.kind == "crash":
        log = outcome_log(outcome)
        engine = world.world.engine
        return diagnose.classify(
            log, engine=engine, exit_code=outcome.exit_code, stage=Stage.BENCHMARKED, learned=False
        ).category
    return KIND_CATEGORY[outcome.kind]


def _apply_load_outcome(
    world: World, outcome: Outcome, level: int, result: TrialResult, bench_scale: float
) -> float:
    """Fail ``result`` at the benchmark, at concurrency ``level``; the simulated seconds
    (checks, then the benchmark's levels up to the failing one)."""
    t = world.timing
    levels = world.levels()
    reached = (levels.index(level) + 1) / len(levels) if level in levels else 1.0
    category = load_category(world, outcome)
    at = f"at concurrency {level}"
    if outcome.kind == "crash":
        died = (
            f"the engine process exited with code {outcome.exit_code} during the benchmarked stage"
        )
        log = outcome_log(outcome)
        evidence = [died, *_evidence(log, category, world.world.engine)]
    elif outcome.kind == "hang":
        evidence = [f"{at}: {level} stream(s) stalled; /health answered 200"]
    elif outcome.kind == "garbage":
        evidence = [f"{at}, sample 1: answer {outcome.text[:60]!r}"]
    elif outcome.kind == "wrong_answer":
        evidence = [f"{at}: a known answer came back as {outcome.text[:60]!r}"]
    else:
        evidence = [f"{at}: {outcome.error_rate:.0%} of requests failed (HTTP 500)"]
    result.fail(Stage.BENCHMARKED, category, evidence, detail=f"under load ({at})")
    seconds = t.startup_s + t.check_s + t.teardown_s + t.bench_s * bench_scale * reached
    result.timings = {"total": seconds}
    return seconds
