"""Only deterministic causes prune: a transient failure is retried once and prunes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import bringup.executors.local as local_mod
import bringup.sweep as sweep_mod
from bringup.engines.llamacpp import LlamaCppAdapter
from bringup.plan.base import PlannedTrial
from bringup.plan.pruning import rule_from
from bringup.plan.space import SearchSpace
from bringup.spec import parse_spec
from bringup.store import Store
from bringup.sweep import PreparedSpec, SweepOptions, run_sweep
from bringup.trial import TrialContext, TrialRun
from bringup.verdict import Category, Stage, Status, TrialResult

SPEC = """
[engine]
name = "llama.cpp"
[model]
path = "m.gguf"
[space]
"--cache-type-k" = ["f16", "q8_0", "q4_0"]
"--parallel" = [1, 4]
[reference]
"--cache-type-k" = "f16"
"--parallel" = 1
[checks]
accuracy = false
[plan]
planner = "default"
"""


def _slow(tid: str, flags: dict[str, Any]) -> TrialResult:
    return TrialResult(trial_id=tid, flags=flags).fail(
        Stage.CORRECT,
        Category.SLOW_RESPONSE,
        ["free-text-1: POST /v1/completions: no response (timed out)"],
        detail="the engine is alive and still working",
        transient=True,
    )


def test_transient_failure_teaches_no_pruning_rule() -> None:
    spec = parse_spec(SPEC)
    flags = {"--cache-type-k": "q4_0", "--parallel": 1}
    assert rule_from(_slow("t", flags), flags, SearchSpace(spec), []) is None
    crash = TrialResult(trial_id="t", flags=flags).fail(
        Stage.CORRECT, Category.RUNTIME_CRASH, ["q4_0 kernel aborted"]
    )
    assert rule_from(crash, flags, SearchSpace(spec), []) is not None  # deterministic: prunes


@pytest.fixture
def fake_trials(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float, float | None]]:
    """q4_0's first look times out (transient); its retry passes. Everything else passes."""
    calls: list[tuple[str, float, float | None]] = []

    async def run_trial(ctx: TrialContext, planned: PlannedTrial, trial_id: str) -> TrialRun:
        calls.append((planned.purpose, ctx.timeout_scale, ctx.decode_tok_s))
        flags = dict(planned.config)
        if flags["--cache-type-k"] == "q4_0" and planned.purpose != "retry":
            result = _slow(trial_id, flags)
        else:
            result = TrialResult(trial_id=trial_id, flags=flags, status=Status.PASSED)
            result.stage = Stage.PASSED
            result.metrics = {"output_tok_s": 10.0, "decode_tok_s_single": 20.0}
        ctx.on_stage(result, result.stage, "done")
        return TrialRun(result)

    monkeypatch.setattr(local_mod, "run_trial", run_trial)
    return calls


async def test_transient_failure_is_retried_once_and_prunes_nothing(
    fake_trials: list[tuple[str, float, float | None]], tmp_path: Path
) -> None:
    spec = parse_spec(SPEC)
    prep = PreparedSpec(spec, LlamaCppAdapter(), "b1", {"model_sha256": "x"}, "fp")
    store = Store(tmp_path / "b.db")
    out = await run_sweep(prep, store, SweepOptions(runs_dir=str(tmp_path / "runs")))
    assert out.planner.pruned == []  # nothing was pruned by a timeout
    q4 = [r for r in out.results if r.flags["--cache-type-k"] == "q4_0"]
    first_looks = [r for r in q4 if r.failure is not None]
    assert first_looks and all(r.failure and r.failure.transient for r in first_looks)
    assert all("retried once" in (r.note or "") for r in first_looks)
    assert [p for p, _, _ in fake_trials].count("retry") == len(first_looks)
    # the retry waits longer than the first look, and timeouts follow the reference's speed
    retries = [(s, d) for p, s, d in fake_trials if p == "retry"]
    assert all(s >= 2.0 and d == 20.0 for s, d in retries)
    # a transient failure is never reused as a decided verdict
    row = store.trials(out.run_id)
    assert any(r.transient for r in row)
    key = sweep_mod._key(prep, first_looks[0].flags)
    decided = store.decided(key, "fp")
    assert decided is not None and decided.passed


async def test_budget_ends_with_an_answer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """max_wall_s runs out after three trials of 100 s (their measured time: the budget
    counts it): the best that passed wins, and the notes say what was not done."""

    async def run_trial(ctx: TrialContext, planned: PlannedTrial, trial_id: str) -> TrialRun:
        flags = dict(planned.config)
        result = TrialResult(trial_id=trial_id, flags=flags, status=Status.PASSED)
        result.stage = Stage.PASSED
        speed = {"f16": 10.0, "q8_0": 12.0, "q4_0": 14.0}[flags["--cache-type-k"]]
        result.metrics = {"output_tok_s": speed * flags["--parallel"]}
        result.timings = {"total": 100.0}
        ctx.on_stage(result, result.stage, "done")
        return TrialRun(result)

    monkeypatch.setattr(local_mod, "run_trial", run_trial)
    text = SPEC.replace('planner = "default"', 'planner = "grid"\nmax_wall_s = 250\nrepeat_top = 2')
    spec = parse_spec(text)
    prep = PreparedSpec(spec, LlamaCppAdapter(), "b1", {"model_sha256": "x"}, "fp")
    out = await run_sweep(prep, Store(tmp_path / "b.db"), SweepOptions(runs_dir=str(tmp_path)))
    assert len(out.results) == 3  # 0, 100, 200 s started; at 300 s the budget is spent
    assert out.winner is not None
    best = max(out.results, key=lambda r: r.metrics["output_tok_s"])
    assert out.winner.trial_id == best.trial_id
    note = next(n for n in out.planner.notes if "wall-time budget" in n)
    assert "3 configuration(s) untried" in note and "repeats of the best 2" in note
