"""A sweep: plan, run and record trials until the planner is done; pick the winner.

Every trial row is written to the store at each stage change. A configuration already
decided for the same fingerprint is reused from the store (unless ``rerun``), so an
interrupted sweep re-run resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup import fingerprint as fp
from bringup.checks import ReferenceAnswers
from bringup.engines.base import EngineAdapter
from bringup.engines.registry import get_engine
from bringup.errors import PortBusyError
from bringup.models import resolve_builtin
from bringup.plan import PlannedTrial, SweepPlanner, make_planner
from bringup.plan.winner import Winner, choose_winner
from bringup.spec import Config, Spec
from bringup.store import Store, config_key
from bringup.trial import LiveServer, TrialContext, run_trial
from bringup.verdict import Category, Stage, Status, TrialResult


@dataclass
class SweepEvent:
    """Progress for a UI: trial k of n, its stage, elapsed time."""

    index: int
    planned_total: int
    trial: TrialResult
    stage: Stage
    message: str
    elapsed_s: float
    reused: bool = False
    exact_total: bool = True  # False when the planner may stop or prune before the bound


@dataclass
class SweepOptions:
    db_path: str = "bringup.db"
    runs_dir: str = "runs"
    rerun: bool = False
    adopt: bool = False
    planner: str | None = None
    max_trials: int | None = None
    api_key: str | None = None


@dataclass
class SweepOutcome:
    run_id: str
    run_dir: Path
    results: list[TrialResult]
    winner: Winner | None
    planner: SweepPlanner
    engine_version: str
    fingerprint: dict[str, Any]
    commands: dict[str, str] = field(default_factory=dict)


@dataclass
class PreparedSpec:
    spec: Spec
    adapter: EngineAdapter
    engine_version: str
    fingerprint: dict[str, Any]
    fingerprint_key: str


def prepare(spec: Spec) -> PreparedSpec:
    """Resolve engine and model; raise the user-facing errors before anything runs."""
    adapter = get_engine(spec.engine.name)
    if spec.model.builtin and not spec.model.path:
        spec.model.path = str(resolve_builtin(spec.model.builtin))
    adapter.check_model(spec)
    adapter.locate(spec)
    info = adapter.info(spec)
    model = spec.model.path
    finger = fp.collect(adapter.name, info.version, model)
    finger["engine_details"] = {k: v for k, v in info.details.items() if k != "binary"}
    return PreparedSpec(spec, adapter, info.version, finger, fp.fingerprint_key(finger))


def _planned_total(spec: Spec, planner: SweepPlanner, max_trials: int | None) -> int:
    total = len(spec.configs()) - len(planner.pruned)
    limit = max_trials or spec.plan.max_trials
    return max(1, min(total, limit) if limit else total)


@dataclass
class RunRecorder:
    """One run's row and folder, and the store writes its trials make as they progress."""

    prep: PreparedSpec
    store: Store
    run_id: str
    run_dir: Path
    started: float

    @classmethod
    def open(cls, prep: PreparedSpec, store: Store, options: SweepOptions) -> RunRecorder:
        spec = prep.spec
        run_id = store.create_run(
            spec_path=spec.source,
            spec_digest=spec.digest(),
            spec_json=spec.public_json(),
            engine=prep.adapter.name,
            fingerprint=prep.fingerprint,
            fingerprint_key=prep.fingerprint_key,
            run_dir="",
        )
        run_dir = (Path(options.runs_dir) / run_id).resolve()
        run_dir.mkdir(parents=True, exist_ok=True)
        store.db.execute("UPDATE runs SET run_dir=? WHERE id=?", (str(run_dir), run_id))
        return cls(prep, store, run_id, run_dir, time.monotonic())

    def save(
        self,
        seq: int,
        result: TrialResult,
        key: str,
        purpose: str,
        reused_from: str | None = None,
    ) -> None:
        self.store.save_trial(
            self.run_id,
            seq,
            result,
            cfg_key=key,
            fingerprint_key=self.prep.fingerprint_key,
            engine=self.prep.adapter.name,
            engine_version=self.prep.engine_version,
            purpose=purpose,
            reused_from=reused_from,
        )

    def event(
        self,
        index: int,
        total: int,
        result: TrialResult,
        stage: Stage,
        message: str,
        exact: bool,
        reused: bool = False,
    ) -> SweepEvent:
        elapsed = time.monotonic() - self.started
        return SweepEvent(index, total, result, stage, message, elapsed, reused, exact)


async def run_sweep(
    prep: PreparedSpec,
    store: Store,
    options: SweepOptions,
    on_event: Callable[[SweepEvent], None] = lambda e: None,
) -> SweepOutcome:
    spec, adapter = prep.spec, prep.adapter
    rec = RunRecorder.open(prep, store, options)
    run_id, run_dir = rec.run_id, rec.run_dir

    planner = make_planner(spec, options.planner)
    max_trials = options.max_trials or spec.plan.max_trials
    started = time.monotonic()
    results: list[TrialResult] = []
    ref_config = spec.reference_config()
    ref_key = _key(prep, ref_config)
    reference: ReferenceAnswers | None = None
    if spec.checks.accuracy and not options.rerun:
        stored = store.reference(prep.fingerprint_key, ref_key)
        reference = ReferenceAnswers.from_dict(stored) if stored else None

    exact = planner.name == "grid" and not spec.plan.max_wall_s

    async def execute(planned: PlannedTrial, index: int) -> TrialResult:
        nonlocal reference
        key = _key(prep, planned.config)
        seq = store.next_seq(run_id)
        trial_id = f"{run_id}-t{seq:03d}"
        is_reference = planned.config == ref_config
        needs_ref = spec.checks.accuracy and reference is None and is_reference
        total = _planned_total(spec, planner, max_trials)
        # repeats and full benchmarks exist to measure again; only first looks are reused
        reusable = planned.purpose in ("explore", "reference")
        if reusable and not options.rerun and not needs_ref:
            prior = store.decided(key, prep.fingerprint_key)
            if prior is not None:
                reused = prior.model_copy(update={"trial_id": trial_id})
                reused.note = (
                    f"verdict reused from {prior.trial_id} (same configuration and fingerprint)"
                )
                rec.save(seq, reused, key, planned.purpose, reused_from=prior.trial_id)
                on_event(rec.event(index, total, reused, reused.stage, "reused", exact, True))
                return reused

        def on_stage(result: TrialResult, stage: Stage, message: str) -> None:
            rec.save(seq, result, key, planned.purpose)
            on_event(rec.event(index, total, result, stage, message, exact))

        ctx = TrialContext(
            spec,
            adapter,
            run_dir,
            adopt=options.adopt,
            reference=None if is_reference else reference,
            collect_reference=is_reference and spec.checks.accuracy,
            on_stage=on_stage,
            api_key=options.api_key,
        )
        try:
            trial = await run_trial(ctx, planned, trial_id)
        except asyncio.CancelledError:
            store.mark_interrupted(run_id)
            raise
        # answers exist only when the reference passed its correctness stage
        if trial.answers is not None and is_reference:
            reference = trial.answers
            store.save_reference(prep.fingerprint_key, ref_key, trial.answers.to_dict())
        return trial.result

    gen = planner.plan()
    status = "done"
    try:
        planned: PlannedTrial | None = next(gen, None)
        # the accuracy gate needs the reference's answers before any candidate is judged
        if (
            planned is not None
            and spec.checks.accuracy
            and reference is None
            and planned.config != ref_config
        ):
            ref_result = await execute(PlannedTrial(ref_config, purpose="reference"), 1)
            results.append(ref_result)
        first_looks = {_key(prep, r.flags): r for r in results}
        index = len(results)
        while planned is not None:
            seen = first_looks.get(_key(prep, planned.config))
            if seen is not None and planned.purpose in ("explore", "reference"):
                # the reference run up front: the planner's own turn for it needs no relaunch
                try:
                    planned = gen.send(seen)
                except StopIteration:
                    planned = None
                continue
            if max_trials and index >= max_trials:
                planner.notes.append(f"stopped after {max_trials} trials (plan.max_trials)")
                break
            if spec.plan.max_wall_s and time.monotonic() - started > spec.plan.max_wall_s:
                planner.notes.append(
                    f"stopped at the wall-time budget of {spec.plan.max_wall_s:.0f} s"
                )
                break
            index += 1
            result = await execute(planned, index)
            results.append(result)
            first_looks.setdefault(_key(prep, planned.config), result)
            if (
                result.failure
                and result.failure.category is Category.PORT_IN_USE
                and result.pid is None
            ):
                raise PortBusyError(
                    f"{result.failure.evidence[0]}; nothing was launched over it: "
                    f"{result.failure.remedy}."
                )
            try:
                planned = gen.send(result)
            except StopIteration:
                planned = None
    except (asyncio.CancelledError, KeyboardInterrupt):
        status = "interrupted"
        store.mark_interrupted(run_id)
        raise
    finally:
        winner = (
            choose_winner([r for r in results if r.status is not Status.INTERRUPTED], spec)
            if status == "done"
            else None
        )
        store.finish_run(
            run_id, status, winner.trial_id if winner else None, planner.notes, planner.pruned
        )
    return SweepOutcome(
        run_id, run_dir, results, winner, planner, prep.engine_version, prep.fingerprint
    )


def _key(prep: PreparedSpec, config: Config) -> str:
    return config_key(
        prep.adapter.name,
        prep.fingerprint.get("model_sha256") or prep.spec.model.path,
        prep.spec.launch.args,
        config,
    )


async def launch_one(
    prep: PreparedSpec,
    store: Store,
    config: Config,
    options: SweepOptions,
    on_event: Callable[[SweepEvent], None] = lambda e: None,
) -> tuple[TrialResult, LiveServer | None]:
    """Run one trial through readiness and checks and keep the server up (``bringup launch``)."""
    spec, adapter = prep.spec, prep.adapter
    rec = RunRecorder.open(prep, store, options)
    run_id, run_dir = rec.run_id, rec.run_dir
    full = spec.reference_config() | config
    key = _key(prep, full)

    def on_stage(result: TrialResult, stage: Stage, message: str) -> None:
        rec.save(1, result, key, "launch")
        on_event(rec.event(1, 1, result, stage, message, True))

    ctx = TrialContext(
        spec,
        adapter,
        run_dir,
        adopt=options.adopt,
        on_stage=on_stage,
        api_key=options.api_key,
        benchmark=False,
    )
    trial = await run_trial(
        ctx,
        PlannedTrial(full, purpose="explore", bench_scale=0.25),
        f"{run_id}-t001",
        keep_alive=True,
    )
    store.finish_run(run_id, "done", trial.result.trial_id if trial.result.passed else None, [], [])
    return trial.result, trial.server
