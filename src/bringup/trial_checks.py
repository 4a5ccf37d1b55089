"""A trial once its engine is launched: ready, identified, correct, accurate, benchmarked.

:func:`after_launch` takes the trial from a launched (or adopted) engine to its verdict;
:mod:`bringup.trial` launches, calls it and tears down. It lives apart because of what it
loads (the checks, the benchmark, the diagnosis, the HTTP client): the trial imports it
after launching, so the engine's start-up runs while these modules load.
"""

from __future__ import annotations

import time
from typing import Any

import aiohttp

from bringup import diagnose
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
from bringup.engines.base import EngineAdapter
from bringup.http import OpenAIClient, RequestError
from bringup.plan.base import PlannedTrial
from bringup.server.devicelock import Held
from bringup.server.identity import verify_identity
from bringup.server.process import EngineProcess, describe_exit
from bringup.server.progress import (
    judge_no_answer,
    request_failure_kind,
    request_timeout_s,
    sample_progress,
)
from bringup.server.readiness import wait_ready
from bringup.spec import Spec
from bringup.trial import LiveServer, TrialContext, TrialRun, _device_turn, _enter
from bringup.verdict import Category, Stage, Status, TrialResult


async def after_launch(
    ctx: TrialContext,
    planned: PlannedTrial,
    run: TrialRun,
    base_url: str,
    start_hold: Held | None,
    *,
    keep_alive: bool,
    keep_failed: bool,
) -> None:
    """Wait for the launched engine (none when adopted), identify it, check and benchmark
    it; a server that passed (or failed, with ``keep_failed``) stays up with ``keep_alive``."""
    spec, adapter, result, proc = ctx.spec, ctx.adapter, run.result, run.process
    if proc is not None:
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
            return

        t0 = _enter(ctx, result, Stage.IDENTIFIED, "who answers?")
        assert result.port is not None  # recorded at launch
        ident = verify_identity(proc.pid, result.port)
        result.checks["identity"] = ident.evidence
        if not ident.ours:
            result.fail(
                Stage.IDENTIFIED,
                Category.PORT_IN_USE,
                [ident.evidence],
                remedy="another process answers on this port; free it or pin a different port",
            )
            return
        result.timings["identified_s"] = round(time.monotonic() - t0, 3)
        result.chosen = adapter.chosen(proc.log_path.read_text(errors="replace"))
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
        adopted = proc is None
        run.server = LiveServer(base_url, proc.pid if proc else None, proc, adopted)


def _blames_exit(result: TrialResult) -> bool:
    return bool(
        result.failure and result.failure.detail and "while serving" in result.failure.detail
    )


def _engine_died(result: TrialResult, proc: EngineProcess, adapter: EngineAdapter) -> None:
    stage = result.stage
    text = proc.log_path.read_text(errors="replace")
    diag = diagnose.classify(text, engine=adapter.name, exit_code=proc.returncode, stage=stage)
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
        diag = diagnose.classify(text, engine=adapter.name, exit_code=proc.returncode, stage=stage)
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
