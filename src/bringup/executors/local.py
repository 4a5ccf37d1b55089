"""The local executor: trials on this machine, beside the store; one at a time unless
``[plan] max_in_flight`` asks for more, which then share the device by turns
(:mod:`bringup.server.devicelock`).

A job that may reuse a verdict gets the latest decided trial of the same launch and
fingerprint from the store instead of a launch (a re-run sweep resumes where it stopped).
Otherwise the trial runs here (:func:`bringup.trial.run_trial`); a pinned port served by
another process ends the sweep (:func:`~bringup.executors.base.abort_if_port_busy`), and a
cancelled sweep leaves its running rows marked interrupted.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from bringup.engines.base import EngineAdapter
from bringup.errors import SpecError
from bringup.executors.base import TrialDone, TrialJob, abort_if_port_busy, reuse_verdict
from bringup.server.devicelock import DeviceLocks
from bringup.spec import Spec
from bringup.store import Store, launched
from bringup.trial import TrialContext, run_trial


def check_local_concurrency(spec: Spec, max_in_flight: int | None) -> None:
    """Trials side by side need a port each: a pinned port allows one at a time."""
    n = max_in_flight or spec.plan.max_in_flight or 1
    if n > 1 and spec.launch.port is not None:
        raise SpecError(
            f"[launch] port = {spec.launch.port} pins one port, so trials cannot run {n} at a"
            " time: remove the port or set max_in_flight = 1"
        )


def device_turns(spec: Spec, in_flight: int = 1) -> DeviceLocks | None:
    """The turns on a shared device, when trials share it (``[resources] shared_device``)."""
    shared = spec.resources.shared_device
    if not (shared or (shared is None and in_flight > 1)):
        return None
    lock_dir = spec.resources.lock_dir
    return DeviceLocks(Path(lock_dir).expanduser()) if lock_dir else DeviceLocks()


@dataclass
class LocalExecutor:
    spec: Spec
    adapter: EngineAdapter
    store: Store
    run_id: str
    run_dir: Path
    fingerprint_key: str
    adopt: bool = False
    api_key: str | None = None
    max_in_flight: int = 1
    device: DeviceLocks | None = None

    def __post_init__(self) -> None:
        check_local_concurrency(self.spec, self.max_in_flight)
        self.device = device_turns(self.spec, self.max_in_flight)

    @property
    def capacity(self) -> int:
        return self.max_in_flight

    async def run(self, job: TrialJob) -> TrialDone:
        if job.may_reuse:
            prior = self.store.decided(job.config_key, self.fingerprint_key)
            if prior is not None:
                return reuse_verdict(job, prior)
        ctx = TrialContext(
            self.spec,
            self.adapter,
            self.run_dir,
            adopt=self.adopt,
            reference=job.reference,
            collect_reference=job.collect_reference,
            on_stage=job.sink.stage,
            api_key=self.api_key,
            on_process=launched.tracker(self.store, self.run_id, job.trial_id),
            decode_tok_s=job.decode_tok_s,
            timeout_scale=job.planned.timeout_scale,
            device=self.device,
        )
        try:
            trial = await run_trial(ctx, job.planned, job.trial_id)
        except asyncio.CancelledError:
            self.store.mark_interrupted(self.run_id)
            raise
        abort_if_port_busy(trial.result)
        return TrialDone(trial.result, trial.answers)
