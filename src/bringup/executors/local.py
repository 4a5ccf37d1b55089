"""The local executor: one trial at a time, on this machine, beside the store.

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
from bringup.executors.base import TrialDone, TrialJob, abort_if_port_busy
from bringup.spec import Spec
from bringup.store import Store, launched
from bringup.trial import TrialContext, run_trial


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

    @property
    def capacity(self) -> int:
        # trials here share the machine's accelerators and, often, a pinned port
        return 1

    async def run(self, job: TrialJob) -> TrialDone:
        if job.may_reuse:
            prior = self.store.decided(job.config_key, self.fingerprint_key)
            if prior is not None:
                reused = prior.model_copy(update={"trial_id": job.trial_id})
                reused.note = (
                    f"verdict reused from {prior.trial_id} (same configuration and fingerprint)"
                )
                job.sink.reused(reused, prior.trial_id)
                return TrialDone(reused, reused_from=prior.trial_id)
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
        )
        try:
            trial = await run_trial(ctx, job.planned, job.trial_id)
        except asyncio.CancelledError:
            self.store.mark_interrupted(self.run_id)
            raise
        abort_if_port_busy(trial.result)
        return TrialDone(trial.result, trial.answers)
