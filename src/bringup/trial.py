"""One trial's life: validate, launch, ready, identified, correct, accurate, benchmarked.

A failed trial is data: every stage that fails records the stage, category, evidence
lines and remedy in the :class:`TrialResult`, which the caller persists after each stage
through ``on_stage``. Teardown always runs (SIGTERM, then SIGKILL after the grace period),
and only for the process this trial started.

This module launches and tears down; what happens once the engine is launched (readiness,
checks, benchmark) is :mod:`bringup.trial_checks`, loaded while the engine starts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bringup.contention import ContentionMeter
from bringup.files import redact_file
from bringup.secrets import flag_secret_values, secret_values
from bringup.server.devicelock import DeviceLocks, Held, Turn
from bringup.server.outside import mark_interrupted, oom_kills
from bringup.server.ports import free_port, inspect_occupant
from bringup.server.process import EngineProcess
from bringup.verdict import Category, Stage, Status, TrialResult

if TYPE_CHECKING:
    from bringup.checks.reference import ReferenceAnswers
    from bringup.engines.base import EngineAdapter
    from bringup.plan.base import PlannedTrial
    from bringup.spec import Spec

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

    _enter(ctx, result, Stage.LAUNCHING, "checking flags")
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

        # the engine starts while the checks' modules load: a fresh Ray worker's first trial
        # launches before it has imported them (on shared cores, each module a node's worker
        # loads before its launch delays the whole sweep)
        from bringup.trial_checks import after_launch

        await after_launch(
            ctx, planned, run, base_url, start_hold, keep_alive=keep_alive, keep_failed=keep_failed
        )
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
