"""The sweep loop over the executor seam: N trials in flight, results told out of order.

A fake executor runs three trials at once and finishes the newest first, so every result
reaches the planner out of the order it was asked for. The planner alone decides: the
reference runs alone before any candidate, halving waits for every short benchmark,
budgets stop every planner the same way.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bringup.engines.registry import get_engine
from bringup.errors import PortBusyError
from bringup.executors.base import Executor, TrialDone, TrialJob, abort_if_port_busy
from bringup.plan import Budget, GridPlanner, PlannedTrial, ReferenceFirst
from bringup.spec import Spec, parse_spec
from bringup.store import Store
from bringup.sweep import PreparedSpec, RunRecorder, SweepOptions, run_sweep
from bringup.verdict import Category, Stage, Status, TrialResult

SPEC = """
[engine]
name = "sglang"
[model]
path = "m"
[space]
"--moe-runner-backend" = ["flashinfer_cutlass", "triton", "flashinfer_trtllm"]
"--kv-cache-dtype" = ["bf16", "fp8_e4m3"]
"--mem-fraction-static" = [0.8, 0.9, 0.95]
[reference]
"--moe-runner-backend" = "flashinfer_cutlass"
[checks]
accuracy = false
"""

SPEED = {"triton": 1.3, "fp8_e4m3": 1.2, 0.95: 1.1}


def judge(job: TrialJob) -> TrialResult:
    """Every configuration passes at a speed set by its values; flashinfer_trtllm fails."""
    config = job.planned.config
    r = TrialResult(trial_id=job.trial_id, flags=dict(config))
    if config["--moe-runner-backend"] == "flashinfer_trtllm":
        return r.fail(
            Stage.LAUNCHING,
            Category.UNSUPPORTED_HARDWARE,
            ["RuntimeError: flashinfer_trtllm needs SM100"],
        )
    speed = 1000.0
    for v in config.values():
        speed *= SPEED.get(v, 1.0)
    r.status, r.stage = Status.PASSED, Stage.PASSED
    r.metrics = {"output_tok_s": speed, "ttft_p50_ms": 100.0, "ttft_p99_ms": 150.0}
    r.timings = {"total": 1.0}
    return r


@dataclass
class NewestFirst:
    """Runs up to ``width`` jobs at once; the newest finishes first, as soon as the
    executor is full or no new job has come for a few turns of the event loop (no clock:
    the order depends only on the loop's turns, so a busy machine cannot change it)."""

    width: int = 3
    idle_turns: int = 10
    waiting: list[TrialJob] = field(default_factory=list)
    started: list[TrialJob] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    most_at_once: int = 0
    # for each job: the indexes of the jobs in flight when it started
    beside: dict[int, list[int]] = field(default_factory=dict)

    @property
    def capacity(self) -> int:
        return self.width

    async def run(self, job: TrialJob) -> TrialDone:
        self.beside[job.index] = [j.index for j in self.waiting]
        self.waiting.append(job)
        self.started.append(job)
        self.most_at_once = max(self.most_at_once, len(self.waiting))
        idle, seen = 0, len(self.started)
        while True:
            await asyncio.sleep(0)
            idle = 0 if len(self.started) != seen else idle + 1
            seen = len(self.started)
            newest = self.waiting[-1] is job
            if newest and (len(self.waiting) == self.width or idle >= self.idle_turns):
                break
        self.waiting.remove(job)
        self.finished.append(job.index)
        result = judge(job)
        job.sink.stage(result, result.stage, "done")
        return TrialDone(result)


def prepared(spec: Spec) -> PreparedSpec:
    return PreparedSpec(spec, get_engine(spec.engine.name), "0.0", {"cpu": "x"}, "fp-test")


def sweep(
    spec: Spec, tmp_path: Path, fake: NewestFirst, **options: object
) -> tuple[Store, list[TrialResult]]:
    store = Store(tmp_path / "b.db")

    def factory(rec: RunRecorder, opts: SweepOptions) -> Executor:
        return fake

    opts = SweepOptions(runs_dir=str(tmp_path / "runs"), **options)  # type: ignore[arg-type]
    outcome = asyncio.run(run_sweep(prepared(spec), store, opts, executor=factory))
    return store, outcome.results


def test_three_in_flight_results_out_of_order(tmp_path: Path) -> None:
    spec = parse_spec(SPEC + "[plan]\nhalving = true\n")
    fake = NewestFirst(width=3)
    store, results = sweep(spec, tmp_path, fake)

    assert fake.most_at_once == 3
    started = [j.index for j in fake.started]
    assert fake.finished != started, "results came back in the order they started"
    # every job's result reached the sweep, each once, and its row is in the store
    assert sorted(r.trial_id for r in results) == sorted(j.trial_id for j in fake.started)
    rows = store.trials()
    assert len(rows) == len(fake.started)
    assert all(r.status in ("passed", "failed") for r in rows)
    explored = [j for j in fake.started if j.planned.purpose in ("reference", "short_bench")]
    keys = [tuple(sorted(j.planned.config.items())) for j in explored]
    assert len(keys) == len(set(keys)), "a configuration was explored twice"
    # the failing backend pruned what it matched among the configurations not yet handed out
    trtllm = [
        j for j in explored if j.planned.config["--moe-runner-backend"] == "flashinfer_trtllm"
    ]
    assert 1 <= len(trtllm) <= 3  # at most the ones already in flight beside the first
    # halving: no full benchmark starts while a short one is still out
    full = [j for j in fake.started if j.planned.purpose == "full_bench"]
    assert full
    short = {j.index for j in fake.started if j.planned.purpose == "short_bench"}
    for j in full:
        assert not short & set(fake.beside[j.index])
    run = store.run()
    assert run is not None and run["winner_trial"] is not None
    winner = store.trial(run["winner_trial"])
    assert winner is not None and winner.flags["--moe-runner-backend"] == "triton"


def test_reference_runs_alone_before_any_candidate(tmp_path: Path) -> None:
    spec = parse_spec(SPEC.replace("accuracy = false", "accuracy = true"))
    fake = NewestFirst(width=3)
    sweep(spec, tmp_path, fake)
    first = fake.started[0]
    assert first.planned.config == spec.reference_config()
    assert first.collect_reference and not fake.beside[first.index]
    # nothing started until the reference finished
    assert fake.beside[fake.started[1].index] == []
    assert fake.finished[0] == first.index
    assert fake.most_at_once == 3


def test_reference_first_runs_the_reference_before_a_grid_and_not_twice() -> None:
    spec = parse_spec(
        SPEC.replace('"flashinfer_cutlass", "triton"', '"triton", "flashinfer_cutlass"')
    )
    grid = GridPlanner(spec=spec)
    steering = ReferenceFirst(grid, spec.reference_config(), needed=True)
    asked: list[PlannedTrial] = []
    while batch := steering.ask(1):
        asked.append(batch[0])
        r = TrialResult(trial_id=f"t{len(asked)}", flags=dict(batch[0].config))
        r.status, r.stage = Status.PASSED, Stage.PASSED
        steering.tell(batch[0], r)
    assert asked[0].purpose == "reference" and asked[0].config == spec.reference_config()
    assert asked[1].config == spec.configs()[0]  # the grid's own first, pushed back
    configs = [tuple(sorted(p.config.items())) for p in asked]
    assert len(configs) == len(set(configs)) == len(spec.configs())


# the seed first in the space: in the grid's own order the control would come 19th
CONTROLLED = SPEC.replace("accuracy = false", 'accuracy = true\ncontrols = ["--random-seed"]')
CONTROLLED = CONTROLLED.replace("[space]", '[space]\n"--random-seed" = [0, 1]')


def test_the_control_runs_alone_right_after_the_reference(tmp_path: Path) -> None:
    spec = parse_spec(CONTROLLED)
    fake = NewestFirst(width=3)
    sweep(spec, tmp_path, fake)
    ref, control = fake.started[0], fake.started[1]
    assert ref.planned.config == spec.reference_config()
    assert control.planned.config == {**spec.reference_config(), "--random-seed": 1}
    # alone: nothing beside it, nothing started before it finished; and never launched a
    # second time by the planner's own turn
    assert fake.beside[control.index] == [] and fake.finished[:2] == [ref.index, control.index]
    assert fake.beside[fake.started[2].index] == []
    keys = [tuple(sorted(j.planned.config.items())) for j in fake.started]
    assert keys.count(tuple(sorted(control.planned.config.items()))) == 1


def test_no_control_is_forced_after_a_failed_reference() -> None:
    spec = parse_spec(CONTROLLED)
    control = {**spec.reference_config(), "--random-seed": 1}
    steering = ReferenceFirst(GridPlanner(spec=spec), spec.reference_config(), True, control)
    (ref,) = steering.ask(1)
    r = TrialResult(trial_id="t1", flags=dict(ref.config))
    steering.tell(ref, r.fail(Stage.LAUNCHING, Category.OOM_GPU, ["out of memory"]))
    assert steering.control is None
    # the planner's own order: its first configuration (the reference) is answered by the
    # first look, its second is not the control
    assert steering.ask(1)[0].config == spec.configs()[1] != control


def test_one_budget_stops_every_planner_alike() -> None:
    spec = parse_spec(SPEC)
    for planner in (GridPlanner(spec=spec, budget=Budget(max_trials=4)),):
        got = planner.ask(10)
        assert len(got) == 4 and planner.ask(1) == []
        assert any(n.startswith("trial budget of 4 spent") for n in planner.notes)
    assert GridPlanner(spec=spec).planned_total() == (18, True)
    assert GridPlanner(spec=spec, budget=Budget(max_wall_s=60)).planned_total() == (18, False)


def test_a_busy_pinned_port_ends_the_sweep_and_stops_the_rest(tmp_path: Path) -> None:
    class Busy(NewestFirst):
        async def run(self, job: TrialJob) -> TrialDone:
            if job.index == 2:
                r = TrialResult(trial_id=job.trial_id, flags=dict(job.planned.config))
                r.fail(Stage.LAUNCHING, Category.PORT_IN_USE, ["127.0.0.1:1 serves"], "free it")
                abort_if_port_busy(r)
            return await super().run(job)

    fake = Busy(width=3)
    with pytest.raises(PortBusyError, match="nothing was launched"):
        sweep(parse_spec(SPEC), tmp_path, fake)
    assert 3 in [j.index for j in fake.started]  # others were in flight, then stopped
