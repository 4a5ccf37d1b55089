"""The Ray executor: each trial a Ray task, placed where the resources it asks for are.

The driver (this process) alone holds the store and the planner. A task runs the whole
trial on the node Ray chose, with the load client beside the engine: a Ray streaming
generator, it yields each stage change as it happens and the result last, and the driver
writes them into the store. Before launching, the task takes that node's fingerprint: a
verdict decided for the same configuration on the same fingerprint stands (a verdict from
an H100 node is never reused for an H200 one), and the row records the node and its
fingerprint.

Faults: a task whose worker or node is lost is not a verdict on its configuration; the row
says ``interrupted`` and the trial is sent again (twice at most). Cancelling the sweep
cancels every task: Ray interrupts it, the trial tears its engine down (SIGTERM to its
process group, SIGKILL after the grace period), and a task still alive after that is
force-killed, its engine then ended by its parent-death signal
(:mod:`bringup.server.process`). Ray does the scheduling; nothing here queues or places.

What runs on the nodes (the task) is :mod:`bringup.executors.ray_task`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.checks import ReferenceAnswers
from bringup.engines.base import EngineAdapter
from bringup.errors import SpecError
from bringup.executors.base import TrialDone, TrialJob, abort_if_port_busy, reuse_verdict
from bringup.executors.ray_task import Finished, Posted, remote_trial
from bringup.spec import Config, Spec
from bringup.store import Store
from bringup.verdict import Status, TrialResult

LOST_RETRIES = 2  # a trial whose worker or node died is sent again at most this often
CANCEL_GRACE_S = 8.0  # a cancelled task's teardown, before it is force-killed


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise SpecError(
            "the ray executor needs Ray: pip install 'bringup[ray]' (or pip install ray)"
        ) from exc
    return ray


def gpus_for(
    spec: Spec, adapter: EngineAdapter, config: Config, cluster_has_resource: bool
) -> float:
    """Accelerators one trial needs: the spec's, else what the engine's parallelism flags
    multiply to (read by its adapter, which knows each flag's spelling and arity)."""
    if spec.resources.gpus is not None:
        return spec.resources.gpus
    n = adapter.gpus_for(spec, config)
    if n > 1:
        return float(n)
    return 1.0 if cluster_has_resource else 0.0


@dataclass
class RayExecutor:
    spec: Spec
    adapter: EngineAdapter
    store: Store
    run_id: str
    run_dir: Path
    fingerprint_key: str
    address: str | None = None
    adopt: bool = False
    api_key: str | None = None
    max_in_flight: int | None = None
    _remote: Any = field(default=None, init=False, repr=False)
    _capacity: int = field(default=1, init=False)
    _has_resource: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        ray = _ray()
        if not ray.is_initialized():
            address = self.address or os.environ.get("RAY_ADDRESS") or None
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            except ConnectionError as exc:
                raise SpecError(
                    f"cannot reach the Ray cluster at {address}: start it with `ray start "
                    "--head` or give the right --address / RAY_ADDRESS"
                ) from exc
        self._remote = ray.remote(max_retries=0, num_returns="streaming")(remote_trial)
        self._capacity = self._fit()

    def _fit(self) -> int:
        ray = _ray()
        res = self.spec.resources
        total = float(ray.cluster_resources().get(res.resource, 0.0))
        self._has_resource = total > 0
        if self.max_in_flight is not None:
            return self.max_in_flight
        per = gpus_for(self.spec, self.adapter, self.spec.reference_config(), self._has_resource)
        if per > 0:
            if total < per:
                raise SpecError(
                    f"a trial needs {per:g} {res.resource} but the Ray cluster has {total:g}:"
                    " set [resources] gpus or add nodes"
                )
            return max(1, math.floor(total / per))
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, math.floor(cpus / res.cpus))

    @property
    def capacity(self) -> int:
        return self._capacity

    def _options(self, config: Config) -> dict[str, Any]:
        res = self.spec.resources
        n = gpus_for(self.spec, self.adapter, config, self._has_resource)
        opts: dict[str, Any] = {"num_cpus": res.cpus}
        if n > 0:
            if res.resource == "GPU":
                opts["num_gpus"] = n  # Ray sets CUDA_VISIBLE_DEVICES from the placement
            else:
                opts["resources"] = {res.resource: n}
        if res.gpu_type:
            opts["accelerator_type"] = res.gpu_type
        return opts

    def _decided(self, job: TrialJob) -> dict[str, str]:
        """Decided verdicts of this launch by fingerprint: the task keeps its node's."""
        if not job.may_reuse:
            return {}
        return {
            key: result.model_dump_json()
            for key, result in self.store.decided_by_fingerprint(job.config_key).items()
        }

    async def run(self, job: TrialJob) -> TrialDone:
        ray = _ray()
        for attempt in range(LOST_RETRIES + 1):
            stream = self._remote.options(**self._options(job.planned.config)).remote(
                self.spec,
                job.planned,
                job.trial_id,
                str(self.run_dir),
                job.reference.to_dict() if job.reference is not None else None,
                job.collect_reference,
                job.decode_tok_s,
                self._decided(job),
                self.adopt,
                self.api_key,
            )
            try:
                out = await self._follow(job, stream)
            except asyncio.CancelledError:
                await self._cancel(stream)
                raise
            except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
                lost = TrialResult(trial_id=job.trial_id, flags=dict(job.planned.config))
                lost.status = Status.INTERRUPTED
                again = attempt < LOST_RETRIES
                lost.note = f"worker lost ({type(exc).__name__}); " + (
                    "re-queued" if again else "given up after retries"
                )
                job.sink.stage(lost, lost.stage, lost.note)
                if again:
                    continue
                return TrialDone(lost)
            result = TrialResult.model_validate_json(out.result_json)
            place = getattr(job.sink, "placed", None)
            if place is not None:
                place(out.placed.node, out.placed.fingerprint)
            if out.reused is not None:
                return reuse_verdict(job, result)
            job.sink.stage(result, result.stage, "done")
            abort_if_port_busy(result)
            answers = ReferenceAnswers.from_dict(out.answers) if out.answers else None
            return TrialDone(result, answers)
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _follow(self, job: TrialJob, stream: Any) -> Finished:
        """Read the task's stream: each stage change is written as it comes, the outcome
        (last) is returned. A lost worker or node raises here, from the stream's end."""
        async for ref in stream:
            item = await ref
            if isinstance(item, Finished):
                return item
            assert isinstance(item, Posted)
            result = TrialResult.model_validate_json(item.result_json)
            job.sink.stage(result, result.stage, item.message)
        raise AssertionError("the trial's stream ended without its outcome")

    async def _cancel(self, stream: Any) -> None:
        """Interrupt the task so its trial tears the engine down; force it after a grace."""
        ray = _ray()
        with contextlib.suppress(Exception):
            ray.cancel(stream, force=False)
        ended = stream.completed()
        ready, _ = await asyncio.to_thread(ray.wait, [ended], timeout=CANCEL_GRACE_S)
        if not ready:
            with contextlib.suppress(Exception):
                ray.cancel(stream, force=True)
