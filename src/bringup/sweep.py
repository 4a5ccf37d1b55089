"""A sweep: the planner chooses, an executor runs, the store records; pick the winner.

:func:`run_sweep` is a loop: ask the planner (behind :class:`~bringup.plan.ReferenceFirst`)
for as many trials as the executor runs at once, hand each to the executor
(:mod:`bringup.executors`), tell the planner each result as it comes. The loop decides
nothing: order, pruning and budgets are the planner's. Every trial row is written to the
store at each stage change. A configuration already decided for the same fingerprint is
reused from the store (unless ``rerun``), so an interrupted sweep re-run resumes where it
stopped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup import fingerprint as fp
from bringup.builtin_models import resolve_builtin
from bringup.checks import ReferenceAnswers
from bringup.checks.paired_load import is_control, note_control
from bringup.engines.base import EngineAdapter
from bringup.engines.registry import get_engine
from bringup.executors.base import Executor, TrialDone, TrialJob
from bringup.executors.local import LocalExecutor, device_turns
from bringup.plan import Budget, PlannedTrial, ReferenceFirst, SweepPlanner, make_planner
from bringup.plan.base import FIRST_LOOK
from bringup.plan.retry import RetryTransient
from bringup.plan.space import flags_key
from bringup.plan.winner import Winner, choose_winner
from bringup.preflight import preflight
from bringup.server.orphans import reconcile
from bringup.spec import Config, Spec
from bringup.store import Store, launch_key
from bringup.store import launched as launched_record
from bringup.store.exchange import provenance
from bringup.trial import LiveServer, TrialContext, TrialRun, run_trial
from bringup.verdict import Stage, Status, TrialResult


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
    runs_dir: str = "runs"
    rerun: bool = False
    adopt: bool = False
    planner: str | None = None
    max_trials: int | None = None
    api_key: str | None = None
    executor: str | None = None  # local | ray (overrides plan.executor)
    address: str | None = None  # the Ray cluster (overrides plan.address)
    max_in_flight: int | None = None  # overrides plan.max_in_flight
    keep_failed: bool = False  # launch: keep a failed trial's server up for inspection


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
    reused: dict[str, str] = field(default_factory=dict)  # trial id -> the trial it reused


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
    preflight(spec, adapter.locate(spec))
    version, finger = fp.engine_fingerprint(spec, adapter)
    return PreparedSpec(spec, adapter, version, finger, fp.fingerprint_key(finger))


@dataclass
class RunRecorder:
    """One run's row and folder, and the store writes its trials make as they progress."""

    prep: PreparedSpec
    store: Store
    run_id: str
    run_dir: Path
    started: float
    notes: list[str] = field(default_factory=list)  # what reconciling a dead run did

    @property
    def secrets(self) -> list[str]:
        return self.prep.spec.secret_values()

    @classmethod
    def open(cls, prep: PreparedSpec, store: Store, options: SweepOptions) -> RunRecorder:
        spec = prep.spec
        # engines and runs a killed bringup left behind: stop what is ours, mark them
        notes = reconcile(store)
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
        launched_record.claim_run(store, run_id)
        return cls(prep, store, run_id, run_dir, time.monotonic(), notes)

    def save(
        self,
        seq: int,
        result: TrialResult,
        key: str,
        purpose: str,
        reused_from: str | None = None,
        node: str | None = None,
        node_fingerprint: dict[str, Any] | None = None,
    ) -> None:
        """``node``/``node_fingerprint``: where a placing executor ran the trial; the row's
        fingerprint key is then that node's (derived here, never carried beside it)."""
        finger = fp.fingerprint_key(node_fingerprint) if node_fingerprint else None
        self.store.save_trial(
            self.run_id,
            seq,
            result,
            cfg_key=key,
            fingerprint_key=finger or self.prep.fingerprint_key,
            node=node,
            node_fingerprint=node_fingerprint,
            engine=self.prep.adapter.name,
            engine_version=self.prep.engine_version,
            purpose=purpose,
            reused_from=reused_from,
            secrets=self.secrets,
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


ExecutorFactory = Callable[[RunRecorder, SweepOptions], Executor]


def local_executor(rec: RunRecorder, options: SweepOptions) -> Executor:
    """The default: on this machine, one trial at a time unless max_in_flight says more."""
    return LocalExecutor(
        rec.prep.spec,
        rec.prep.adapter,
        rec.store,
        rec.run_id,
        rec.run_dir,
        rec.prep.fingerprint_key,
        adopt=options.adopt,
        api_key=options.api_key,
        max_in_flight=options.max_in_flight or rec.prep.spec.plan.max_in_flight or 1,
    )


def ray_executor(rec: RunRecorder, options: SweepOptions) -> Executor:
    """Trials as Ray tasks placed where their resources are (the ``ray`` extra)."""
    from bringup.executors.ray import RayExecutor

    plan = rec.prep.spec.plan
    return RayExecutor(
        rec.prep.spec,
        rec.prep.adapter,
        rec.store,
        rec.run_id,
        rec.run_dir,
        rec.prep.fingerprint_key,
        address=options.address or plan.address,
        adopt=options.adopt,
        api_key=options.api_key,
        max_in_flight=options.max_in_flight or plan.max_in_flight,
    )


def executor_for(spec: Spec, options: SweepOptions) -> ExecutorFactory:
    """The executor the options or the spec's ``[plan] executor`` name."""
    name = options.executor or spec.plan.executor
    return ray_executor if name == "ray" else local_executor


@dataclass
class _RowSink:
    """One job's progress: its store row at every stage change, and the progress event."""

    rec: RunRecorder
    job_seq: int
    key: str
    purpose: str
    total: tuple[int, bool]
    on_event: Callable[[SweepEvent], None]

    node: str | None = None  # where a placing executor ran it, once it says
    node_fingerprint: dict[str, Any] | None = None

    def placed(self, node: str, fingerprint: dict[str, Any]) -> None:
        self.node, self.node_fingerprint = node, fingerprint

    def stage(self, result: TrialResult, stage: Stage, message: str) -> None:
        self.rec.save(
            self.job_seq,
            result,
            self.key,
            self.purpose,
            node=self.node,
            node_fingerprint=self.node_fingerprint,
        )
        total, exact = self.total
        self.on_event(self.rec.event(self.job_seq, total, result, stage, message, exact))

    def reused(self, result: TrialResult, prior_trial: str) -> None:
        seen = provenance(self.rec.store, prior_trial)
        if seen:  # a verdict imported from another store cites where it was seen
            result.note = f"{result.note or 'verdict reused'}; {seen}"
        self.rec.save(
            self.job_seq,
            result,
            self.key,
            self.purpose,
            reused_from=prior_trial,
            node=self.node,
            node_fingerprint=self.node_fingerprint,
        )
        total, exact = self.total
        event = self.rec.event(self.job_seq, total, result, result.stage, "reused", exact, True)
        self.on_event(event)


async def run_sweep(
    prep: PreparedSpec,
    store: Store,
    options: SweepOptions,
    on_event: Callable[[SweepEvent], None] = lambda e: None,
    executor: ExecutorFactory | None = None,
) -> SweepOutcome:
    """Ask the planner for as many trials as the executor runs at once, run them, tell the
    planner each result as it comes, until the planner has nothing more; pick the winner."""
    spec = prep.spec
    rec = RunRecorder.open(prep, store, options)
    run_id, run_dir = rec.run_id, rec.run_dir
    planner = make_planner(spec, options.planner, Budget.from_spec(spec, options.max_trials))
    planner.notes.extend(rec.notes)
    ref_config = spec.reference_config()
    ref_key = _key(prep, ref_config)
    reference: ReferenceAnswers | None = None
    if spec.checks.accuracy and not options.rerun:
        stored = store.reference(prep.fingerprint_key, ref_key)
        reference = ReferenceAnswers.from_dict(stored) if stored else None
    # the accuracy gate needs the reference's answers before any candidate is judged, and
    # the paired check under load the control's floor
    steering = RetryTransient(
        ReferenceFirst(
            planner,
            ref_config,
            spec.checks.accuracy and reference is None,
            control=control_first(spec, reference),
        )
    )
    ref_decode: list[float] = []  # the reference's measured decode rate: sizes request timeouts
    runner = (executor or executor_for(spec, options))(rec, options)
    seq = store.next_seq(run_id)
    results: list[TrialResult] = []
    reused: dict[str, str] = {}
    running: dict[asyncio.Task[TrialDone], TrialJob] = {}

    def job_for(planned: PlannedTrial) -> TrialJob:
        nonlocal seq
        key = _key(prep, planned.config)
        is_reference = planned.config == ref_config
        collect = is_reference and spec.checks.accuracy
        job = TrialJob(
            planned,
            index=seq,
            trial_id=f"{run_id}-t{seq:03d}",
            config_key=key,
            sink=_RowSink(rec, seq, key, planned.purpose, planner.planned_total(), on_event),
            reference=None if is_reference else reference,
            collect_reference=collect,
            # repeats and full benchmarks exist to measure again; only first looks are
            # reused, and never a reference whose answers are still missing
            may_reuse=planned.purpose in FIRST_LOOK
            and not options.rerun
            and not (collect and reference is None),
            decode_tok_s=ref_decode[0] if ref_decode else None,
        )
        seq += 1
        return job

    status = "done"
    try:
        while True:
            room = runner.capacity - len(running)
            for planned in steering.ask(room) if room > 0 else []:
                job = job_for(planned)
                running[asyncio.ensure_future(runner.run(job))] = job
            if not running:
                break
            finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(finished, key=lambda t: running[t].index):
                job = running.pop(task)
                done = task.result()
                results.append(done.result)
                if done.reused_from:
                    reused[done.result.trial_id] = done.reused_from
                # answers exist only when the reference passed its correctness stage
                if done.answers is not None and job.collect_reference:
                    reference = done.answers
                    store.save_reference(prep.fingerprint_key, ref_key, done.answers.to_dict())
                if job.planned.config == ref_config:
                    _note_reference_speed(done.result, ref_decode)
                # a relaunch of the reference under load: the floor later candidates meet
                if reference is not None and note_control(
                    reference,
                    job.planned.config,
                    ref_config,
                    spec.checks.controls,
                    done.result.checks,
                    done.result.trial_id,
                ):
                    store.save_reference(prep.fingerprint_key, ref_key, reference.to_dict())
                retried = steering.will_retry(job.planned, done.result)
                steering.tell(job.planned, done.result)
                if retried:  # the row keeps the note: shown, superseded by the retry
                    job.sink.stage(done.result, done.result.stage, "retrying")
    except (asyncio.CancelledError, KeyboardInterrupt):
        status = "interrupted"
        await _stop_all(running)
        store.mark_interrupted(run_id)
        raise
    finally:
        await _stop_all(running)
        winner = (
            choose_winner([r for r in results if r.status is not Status.INTERRUPTED], spec)
            if status == "done"
            else None
        )
        store.finish_run(
            run_id, status, winner.trial_id if winner else None, planner.notes, planner.pruned
        )
    return SweepOutcome(
        run_id,
        run_dir,
        results,
        winner,
        planner,
        prep.engine_version,
        prep.fingerprint,
        reused=reused,
    )


def control_first(spec: Spec, reference: ReferenceAnswers | None) -> Config | None:
    """The control to run right after the reference: the space's first relaunch of the
    reference (``[checks] controls``), unless stored answers already carry its floor or the
    floor would judge nothing (no accuracy gate)."""
    if not spec.checks.accuracy or not spec.checks.controls:
        return None
    if reference is not None and (not spec.checks.paired_load or "load_floor" in reference.meta):
        return None
    ref = spec.reference_config()
    return next((c for c in spec.configs() if is_control(c, ref, spec.checks.controls)), None)


async def _stop_all(running: dict[asyncio.Task[TrialDone], TrialJob]) -> None:
    """Cancel the trials still running (another ended the sweep) and wait for their teardown."""
    for task in running:
        task.cancel()
    if running:
        await asyncio.gather(*running, return_exceptions=True)
    running.clear()


def _note_reference_speed(result: TrialResult, into: list[float]) -> None:
    """Keep the reference's single-request decode rate: it sizes later request timeouts."""
    rate = result.metrics.get("decode_tok_s_single")
    if not into and isinstance(rate, int | float) and rate > 0:
        into.append(float(rate))


def _key(prep: PreparedSpec, config: Config) -> str:
    return launch_key(
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
    """Run one trial through readiness and every check and keep the server up (``bringup
    launch``). The accuracy gate compares it with the reference answers stored for this
    fingerprint; where none are stored, the reference runs first (no benchmark) and its
    answers are stored for later launches and sweeps."""
    spec = prep.spec
    rec = RunRecorder.open(prep, store, options)
    full = spec.reference_config() | config
    ref_config = spec.reference_config()
    ref_key = _key(prep, ref_config)
    reference: ReferenceAnswers | None = None
    if spec.checks.accuracy and not options.rerun:
        stored = store.reference(prep.fingerprint_key, ref_key)
        reference = ReferenceAnswers.from_dict(stored) if stored else None
    # without stored answers the reference itself collects them, or runs first to
    is_reference = flags_key(full) == flags_key(ref_config)
    first = spec.checks.accuracy and reference is None and not is_reference
    total = 2 if first else 1
    if first:
        ref_run = await _launch_trial(rec, 1, total, ref_config, options, on_event, collect=True)
        if ref_run.answers is not None:  # the reference passed its correctness stage
            reference = ref_run.answers
            store.save_reference(prep.fingerprint_key, ref_key, reference.to_dict())
    collect = spec.checks.accuracy and reference is None and is_reference
    trial = await _launch_trial(
        rec, total, total, full, options, on_event, reference=reference, collect=collect
    )
    if trial.answers is not None and collect:
        store.save_reference(prep.fingerprint_key, ref_key, trial.answers.to_dict())
    winner = trial.result.trial_id if trial.result.passed else None
    store.finish_run(rec.run_id, "done", winner, [], [])
    return trial.result, trial.server


async def _launch_trial(
    rec: RunRecorder,
    seq: int,
    total: int,
    config: Config,
    options: SweepOptions,
    on_event: Callable[[SweepEvent], None],
    *,
    reference: ReferenceAnswers | None = None,
    collect: bool = False,
) -> TrialRun:
    """One trial of ``bringup launch``: the reference run first (``seq`` < ``total``: its
    answers collected, then torn down), or the launched configuration (kept up)."""
    prep, spec = rec.prep, rec.prep.spec
    key = _key(prep, config)
    trial_id = f"{rec.run_id}-t{seq:03d}"
    last = seq == total
    purpose = "launch" if last else "reference"

    def on_stage(result: TrialResult, stage: Stage, message: str) -> None:
        rec.save(seq, result, key, purpose)
        on_event(rec.event(seq, total, result, stage, message, True))

    ctx = TrialContext(
        spec,
        prep.adapter,
        rec.run_dir,
        adopt=options.adopt,
        reference=reference,
        collect_reference=collect,
        on_stage=on_stage,
        api_key=options.api_key,
        benchmark=False,
        on_process=launched_record.tracker(rec.store, rec.run_id, trial_id),
        device=device_turns(spec),
    )
    return await run_trial(
        ctx,
        PlannedTrial(config, purpose="explore" if last else "reference"),
        trial_id,
        keep_alive=last,
        keep_failed=options.keep_failed and last,
    )
