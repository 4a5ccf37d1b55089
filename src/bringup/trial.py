"""One trial's life: validate, launch, ready, identified, correct, accurate, benchmarked.

A failed trial is data: every stage that fails records the stage, category, evidence
lines and remedy in the :class:`TrialResult`, which the caller persists after each stage
through ``on_stage``. Teardown always runs (SIGTERM, then SIGKILL after the grace period),
and only for the process this trial started.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bringup.bench import BenchConfig, run_benchmark
from bringup.bench.sentinels import DEFAULT_SENTINELS
from bringup.checks import (
    ReferenceAnswers,
    check_under_load,
    collect_answers,
    run_correctness,
    suite_for,
)
from bringup.checks.accuracy_budget import judge_accuracy
from bringup.checks.correctness import FREE_TEXT_TOKENS
from bringup.checks.long_context import long_context_check
from bringup.checks.paired_load import answers_under_load, judge_under_load
from bringup.checks.speculative import (
    bench_acceptance,
    metrics_text,
    speculative_check,
    speculative_flags,
)
from bringup.checks.stream_text import Engine
from bringup.contention import ContentionMeter
from bringup.diagnose import classify
from bringup.engines.base import EngineAdapter
from bringup.files import redact_file
from bringup.http import OpenAIClient, RequestError
from bringup.plan.base import PlannedTrial
from bringup.secrets import flag_secret_values, secret_values
from bringup.server.devicelock import DeviceLocks, Held, Turn
from bringup.server.identity import verify_identity
from bringup.server.outside import mark_interrupted, oom_kills
from bringup.server.ports import free_port, inspect_occupant
from bringup.server.process import EngineProcess, describe_exit
from bringup.server.progress import (
    judge_no_answer,
    request_failure_kind,
    request_timeout_s,
    sample_progress,
)
from bringup.server.readiness import wait_ready
from bringup.spec import Spec
from bringup.verdict import Category, Stage, Status, TrialResult

StageHook = Callable[[TrialResult, Stage, str], None]
ProcessHook = Callable[[EngineProcess, bool], None]  # (process, True spawned / False stopped)
# Ctrl-C: the user is waiting, so the engine gets a short grace before SIGKILL.
INTERRUPT_GRACE_S = 3.0


@dataclass
class TrialContext:
    spec: Spec
    adapter: EngineAdapter
    run_dir: Path
    adopt: bool = False
    reference: ReferenceAnswers | None = None
    collect_reference: bool = False  # this trial's answers become the reference
    on_stage: StageHook = field(default=lambda r, s, m: None)
    api_key: str | None = None
    benchmark: bool = True
    on_process: ProcessHook = field(default=lambda p, alive: None)
    # single-request decode rate measured on the reference: sets the checks' request timeout
    decode_tok_s: float | None = None
    timeout_scale: float = 1.0  # a retry after a slow response waits proportionally longer
    # trials side by side on one device: start-ups, checks with benchmarks, and memory
    # releases each take turns (server.devicelock); None: this trial is alone
    device: DeviceLocks | None = None


@dataclass
class LiveServer:
    """A server a trial left running (``bringup launch``)."""

    url: str
    pid: int | None
    process: EngineProcess | None
    adopted: bool = False


@dataclass
class TrialRun:
    result: TrialResult
    server: LiveServer | None = None
    answers: ReferenceAnswers | None = None
    process: EngineProcess | None = None


def _enter(ctx: TrialContext, result: TrialResult, stage: Stage, message: str = "") -> float:
    result.stage = stage
    ctx.on_stage(result, stage, message)
    return time.monotonic()


async def run_trial(
    ctx: TrialContext,
    planned: PlannedTrial,
    trial_id: str,
    *,
    keep_alive: bool = False,
    keep_failed: bool = False,
) -> TrialRun:
    spec, adapter = ctx.spec, ctx.adapter
    result = TrialResult(trial_id=trial_id, flags=dict(planned.config))
    run = TrialRun(result)
    trial_start = time.monotonic()
    meter = ContentionMeter.start("trial")
    oom_before = oom_kills()  # an engine SIGKILLed meanwhile by anyone else is no verdict

    t0 = _enter(ctx, result, Stage.LAUNCHING, "checking flags")
    problems = adapter.check_flags(spec, planned.config)
    if problems:
        result.fail(
            Stage.LAUNCHING,
            Category.INVALID_CONFIG,
            [p.message for p in problems],
            remedy="; ".join(f"use {p.replacement}" for p in problems if p.replacement) or None,
            detail="refused before launch by the engine's own CLI",
        )
        ctx.on_stage(result, result.stage, "invalid flags")
        return run

    host = spec.launch.host
    port = spec.launch.port
    proc: EngineProcess | None = None
    adopted = False
    if port is not None:
        occupant = await inspect_occupant(host, port)
        if occupant is not None:
            served = adapter.served_model(spec)
            if ctx.adopt and served and any(served in m or m in served for m in occupant.model_ids):
                adopted = True
                result.note = f"adopted the server already on port {port}: {occupant.describe()}"
            else:
                result.fail(
                    Stage.LAUNCHING,
                    Category.PORT_IN_USE,
                    [occupant.describe()],
                    remedy="stop that server, set another launch.port, or pass --adopt to reuse it"
                    " if it serves the same model",
                    detail=f"port {port} is pinned by the spec and already serves; "
                    "nothing launched",
                )
                ctx.on_stage(result, result.stage, "port busy")
                return run
    else:
        port = free_port(host)
    # recorded as launched: deploy reads these facts, never the command line
    result.host, result.port, result.health_path = host, port, adapter.health_path_for(spec)
    base_url = f"http://{host}:{port}"

    start_hold: Held | None = None
    try:
        if not adopted:
            start_hold = await _device_turn(ctx, result, "starting")
            argv = adapter.build_command(spec, planned.config, host, port)
            result.command = argv
            log_path = ctx.run_dir / f"{trial_id}.log"
            result.log_path = str(log_path)
            try:
                proc = EngineProcess(argv, log_path, adapter.env(spec, planned.config))
            except OSError as exc:  # not executable, E2BIG...: preflight catches most
                result.fail(
                    Stage.LAUNCHING,
                    Category.INVALID_CONFIG,
                    [f"cannot start {argv[0]}: {exc.strerror or exc}"],
                    detail="the operating system refused to start the engine",
                )
                return run
            result.pid = proc.pid
            ctx.on_process(proc, True)
            run.process = proc
            ctx.on_stage(result, Stage.LAUNCHING, f"pid {proc.pid} on port {port}")

            t0 = _enter(ctx, result, Stage.READY, "waiting for health")
            outcome = await wait_ready(
                proc,
                adapter,
                base_url,
                start_timeout_s=spec.launch.start_timeout_s,
                hang_timeout_s=spec.launch.hang_timeout_s,
                health_path=result.health_path,
                ready_pattern=adapter.ready_pattern_for(spec),
            )
            result.timings["ready_s"] = round(outcome.elapsed_s, 3)
            if start_hold is not None:
                start_hold.release()
            if not outcome.ready:
                assert outcome.failure is not None
                result.fail_with(outcome.failure)
                return run

            t0 = _enter(ctx, result, Stage.IDENTIFIED, "who answers?")
            ident = verify_identity(proc.pid, port)
            result.checks["identity"] = ident.evidence
            if not ident.ours:
                result.fail(
                    Stage.IDENTIFIED,
                    Category.PORT_IN_USE,
                    [ident.evidence],
                    remedy="another process answers on this port; free it or pin a different port",
                )
                return run
            result.timings["identified_s"] = round(time.monotonic() - t0, 3)
            result.chosen = adapter.chosen(log_path.read_text(errors="replace"))
            result.chosen.update(await _chosen_from_info(adapter, base_url))

        measure_hold = await _device_turn(ctx, result, "measuring")
        try:
            await _checks_and_bench(ctx, planned, run, base_url)
        except (RequestError, aiohttp.ClientError, TimeoutError) as exc:
            # a server that stops answering mid-trial is a verdict, never an abort
            what = f"request failed during the {result.stage.value} stage: {exc or 'timed out'}"
            await _no_answer(result, proc, adapter, request_failure_kind(exc), what, [what])
        finally:
            if measure_hold is not None:
                measure_hold.release()
        if proc is not None and proc.poll() is not None and not _blames_exit(result):
            # errors under load, wrong answers... from an engine that died: the death decides
            _engine_died(result, proc, adapter)
        if result.status is Status.RUNNING and "skipped" in result.checks.get("accuracy", {}):
            result.status = Status.UNCHECKED  # nothing failed, but accuracy was not judged
        if result.status is Status.RUNNING:
            result.status = Status.PASSED
            _enter(ctx, result, Stage.PASSED, "passed")
        # a failed server still running is kept only when asked, for inspection
        alive = proc is None or proc.poll() is None
        # unchecked: nothing failed, accuracy was not judged (no reference answers to hand)
        kept = result.passed or result.status is Status.UNCHECKED
        if keep_alive and (kept or (keep_failed and alive)):
            run.server = LiveServer(base_url, proc.pid if proc else None, proc, adopted)
        return run
    except asyncio.CancelledError:
        result.status = Status.INTERRUPTED
        raise
    finally:
        result.timings["total"] = round(time.monotonic() - trial_start, 3)
        result.contention["trial"] = meter.stop()  # before teardown: the engine still counts
        if start_hold is not None:
            start_hold.release()
        if proc is not None and run.server is None:
            # before teardown: any signal death until now was someone else's
            mark_interrupted(result, proc.poll(), oom_before)
            interrupted = result.status is Status.INTERRUPTED
            # an interrupted sweep stops at once; otherwise memory is freed between start-ups,
            # unless the engine and all its children are gone already (nothing left to free)
            release = (
                None
                if interrupted or not proc.running()
                else await _device_turn(ctx, result, "releasing")
            )
            try:
                proc.stop(INTERRUPT_GRACE_S if interrupted else spec.launch.stop_grace_s)
            finally:
                if release is not None:
                    release.release()
            ctx.on_process(proc, False)
            # an engine may echo its own command line: no secret stays in the kept log
            redact_file(proc.log_path, _secrets_of(proc, spec, planned))
            if result.failure and result.log_path:
                # the log is complete only after the process is gone
                text = Path(result.log_path).read_text(errors="replace")
                result.chosen = result.chosen or adapter.chosen(text)
        ctx.on_stage(result, result.stage, "done")


_WAITING: dict[Turn, str] = {
    "starting": "waiting to start: another engine is starting or freeing device memory",
    "measuring": "waiting for the device: another trial is being checked or measured",
    "releasing": "waiting to stop: another trial is starting on this device",
}


async def _device_turn(ctx: TrialContext, result: TrialResult, turn: Turn) -> Held | None:
    """This trial's turn on a shared device (None when it has the device to itself)."""
    if ctx.device is None:
        return None
    held = await ctx.device.turn(
        turn, on_wait=lambda: ctx.on_stage(result, result.stage, _WAITING[turn])
    )
    if held.waited_s > 0:
        key = f"device_wait_{turn}_s"
        result.timings[key] = round(result.timings.get(key, 0.0) + held.waited_s, 3)
    return held


def _secrets_of(proc: EngineProcess, spec: Spec, planned: PlannedTrial) -> list[str]:
    return [
        *spec.secret_values(),
        *secret_values(proc.argv, proc.env),
        *flag_secret_values(planned.config),
    ]


def _blames_exit(result: TrialResult) -> bool:
    return bool(
        result.failure and result.failure.detail and "while serving" in result.failure.detail
    )


def _engine_died(result: TrialResult, proc: EngineProcess, adapter: EngineAdapter) -> None:
    stage = result.stage
    text = proc.log_path.read_text(errors="replace")
    diag = classify(text, engine=adapter.name, exit_code=proc.returncode, stage=stage)
    died = f"the engine process {describe_exit(proc.returncode)} during the {stage.value} stage"
    seen = f"; before that the stage saw {result.failure.headline()}" if result.failure else ""
    result.fail(
        stage, diag.category, [died, *diag.evidence], diag.remedy, f"{died} while serving{seen}"
    )


async def _no_answer(
    result: TrialResult,
    proc: EngineProcess | None,
    adapter: EngineAdapter,
    kind: str,
    what: str,
    evidence: list[str],
) -> None:
    """A request got no (good) answer: dead, failing, slow or stalled (server.progress)."""
    stage = result.stage
    if proc is not None and proc.poll() is not None:
        text = proc.log_path.read_text(errors="replace")
        diag = classify(text, engine=adapter.name, exit_code=proc.returncode, stage=stage)
        detail = f"the engine {describe_exit(proc.returncode)} while serving; {what}"
        result.fail_with(diag.to_failure(stage, detail))
        return
    progress = None
    if proc is not None and kind in ("timeout", "connection"):
        progress = await sample_progress(proc.pid, proc.log_path)
    category, transient, detail = judge_no_answer(kind, progress)
    extra = progress.evidence if progress else []
    result.fail(stage, category, [*evidence, *extra], detail=detail, transient=transient)


async def _paired_under_load(
    ctx: TrialContext, planned: PlannedTrial, run: TrialRun, client: OpenAIClient
) -> None:
    """The accuracy prompts under the benchmark's top load (checks.paired_load)."""
    result, ref = run.result, ctx.reference
    if ctx.collect_reference and run.answers is not None:
        run.answers.meta["under_load"] = (await answers_under_load(client, ctx.spec)).to_dict()
        return
    stored = ref.meta.get("under_load") if ref is not None else None
    if ref is None or not stored:
        return
    ref_load = ReferenceAnswers.from_dict(stored)
    cand = await answers_under_load(client, ctx.spec, reference=ref_load)
    paired, _ = await judge_under_load(
        ref_load, cand, ctx.spec, ref.meta.get("load_floor"), candidate_flags=planned.config
    )
    result.checks["accuracy_under_load"] = paired.to_dict()
    if not paired.passed:
        result.fail(
            Stage.ACCURATE, paired.category or Category.ACCURACY_REGRESSION, paired.evidence
        )


def check_tokens(spec: Spec) -> int:
    """The most tokens one check request asks for (its timeout is sized for that)."""
    asked = [FREE_TEXT_TOKENS, spec.checks.accuracy_tokens]
    if spec.checks.known_answers:
        asked += [ka.max_tokens for ka in suite_for(spec)]
    return max(asked)


def sentinel_prompts(spec: Spec) -> tuple[str, ...]:
    """Natural prompts to answer beside the load: the known-answer prompts where enabled."""
    if spec.checks.known_answers:
        prompts = tuple(ka.prompt for ka in suite_for(spec))[:3]
        if prompts:
            return prompts
    return DEFAULT_SENTINELS


async def _metrics(base_url: str, api_key: str | None) -> str:
    async with OpenAIClient(base_url, api_key=api_key) as client:
        return await metrics_text(client)


async def _chosen_from_info(adapter: EngineAdapter, base_url: str) -> dict[str, str]:
    """What the engine's info endpoints (e.g. SGLang /server_info) say it resolved."""
    chosen: dict[str, str] = {}
    if not adapter.info_paths:
        return chosen
    async with OpenAIClient(base_url) as client:
        for path in adapter.info_paths:
            payload = await client.get_json(path)
            if payload is None:
                continue
            chosen.update(adapter.chosen_from_info(path, payload))
            version = adapter.version_from_info(path, payload)
            if version:
                chosen["engine_version"] = version
    return chosen


async def _checks_and_bench(
    ctx: TrialContext, planned: PlannedTrial, run: TrialRun, base_url: str
) -> None:
    spec, result = ctx.spec, run.result
    model = ctx.adapter.served_model(spec)
    timeout_s = request_timeout_s(check_tokens(spec), ctx.decode_tok_s) * ctx.timeout_scale
    result.checks["request_timeout_s"] = round(timeout_s, 1)
    async with OpenAIClient(base_url, api_key=ctx.api_key, timeout_s=timeout_s) as client:
        t0 = _enter(ctx, result, Stage.CORRECT, "known answers and garbage detectors")
        engine = None
        if run.process is not None:  # a stalled stream is judged by what the engine did
            engine = Engine(run.process.pid, str(run.process.log_path))
        report = await run_correctness(client, spec, engine)
        result.checks["correctness"] = report.to_dict()
        result.timings["correct_s"] = round(time.monotonic() - t0, 3)
        if not report.passed and report.category is Category.RUNTIME_CRASH:
            # requests got no answer: whether the engine is dead, slow or stalled decides
            await _no_answer(
                result,
                run.process,
                ctx.adapter,
                report.failure_kind,
                report.evidence[0],
                report.evidence,
            )
            return
        if not report.passed:
            assert report.category is not None
            result.fail(Stage.CORRECT, report.category, report.evidence, transient=report.transient)
            return

        if spec.checks.accuracy and ctx.reference is None and not ctx.collect_reference:
            result.checks["accuracy"] = {
                "skipped": "the reference configuration gave no answers to compare against"
            }
        if spec.checks.accuracy and (ctx.reference is not None or ctx.collect_reference):
            t0 = _enter(ctx, result, Stage.ACCURATE, "differential check against the reference")
            candidate_of = None if ctx.collect_reference else ctx.reference
            speculative = candidate_of is not None and bool(speculative_flags(planned.config))
            # the accurate stage's own answers are the speculative check's: acceptance is
            # counted over their requests
            before = await metrics_text(client) if speculative else ""
            if candidate_of is not None:  # asks more prompts while the verdict is inconclusive
                acc, run.answers = await judge_accuracy(
                    client, candidate_of, spec, candidate_flags=planned.config
                )
                result.checks["accuracy"] = acc.to_dict()
                if not acc.passed:
                    result.fail(
                        Stage.ACCURATE,
                        acc.category or Category.ACCURACY_REGRESSION,
                        acc.evidence,
                    )
            else:
                run.answers = await collect_answers(client, spec)
                result.checks["accuracy"] = {"role": "reference"}
            if speculative and not result.failure:
                assert ctx.reference is not None and run.answers is not None
                sp = await speculative_check(
                    client,
                    ctx.reference,
                    run.answers,
                    planned.config,
                    spec.reference_config(),
                    before,
                )
                result.checks["speculative"] = sp.to_dict()
                if not sp.passed:
                    assert sp.category is not None
                    result.fail(Stage.ACCURATE, sp.category, sp.evidence)
            if spec.checks.paired_load and not result.failure:
                await _paired_under_load(ctx, planned, run, client)
            result.timings["accurate_s"] = round(time.monotonic() - t0, 3)
            if result.failure:
                return

        if spec.checks.long_context:
            t0 = _enter(ctx, result, Stage.ACCURATE, "long-context probe")
            # a prompt filling the context takes a while to prefill on a slow host
            async with OpenAIClient(base_url, api_key=ctx.api_key, timeout_s=300) as slow:
                lc = await long_context_check(
                    slow,
                    stated=spec.checks.context_tokens,
                    cap=spec.checks.long_context_max_tokens,
                    streams=max(spec.bench.concurrency or [1]),
                    model=model,
                )
            result.checks["long_context"] = lc.to_dict()
            result.timings["long_context_s"] = round(time.monotonic() - t0, 3)
            if not lc.passed:
                assert lc.category is not None
                result.fail(Stage.ACCURATE, lc.category, lc.evidence)
                return

    if not ctx.benchmark:
        return
    t0 = _enter(ctx, result, Stage.BENCHMARKED, "streaming load")
    cfg = BenchConfig.from_spec(spec.bench, model=model, scale=planned.bench_scale)
    cfg.api_key = ctx.api_key
    cfg.sentinels = sentinel_prompts(spec)
    cfg.health_path = ctx.adapter.health_path_for(spec)
    if run.process is not None:  # a stall is judged by whether the engine kept working
        cfg.engine_pid, cfg.engine_log = run.process.pid, str(run.process.log_path)
    spec_report: dict[str, Any] | None = result.checks.get("speculative")
    before = await _metrics(base_url, ctx.api_key) if spec_report else ""
    meter = ContentionMeter.start("benchmark")
    bench = await run_benchmark(base_url, cfg)
    result.contention["benchmark"] = meter.stop()
    if spec_report:  # acceptance over the benchmark's own requests, beside the natural prompts'
        bench_acceptance(spec_report, before, await _metrics(base_url, ctx.api_key))
    result.timings["benchmarked_s"] = round(time.monotonic() - t0, 3)
    result.metrics = bench.summary()
    result.metrics["bench_scale"] = planned.bench_scale
    result.metrics.update(result.checks.get("speculative", {}).get("figures") or {})
    result.checks["bench"] = bench.to_dict()
    load = check_under_load(bench.levels, known=suite_for(spec))
    result.checks["under_load"] = load.to_dict()
    if not load.passed:
        assert load.category is not None
        result.fail(Stage.BENCHMARKED, load.category, load.evidence, transient=load.transient)
