"""What runs on a Ray node: one trial, start to teardown, streamed back to the driver.

A fresh Ray worker unpickles a task's function by importing the module that defines it,
before the task can start. So this module imports nothing of bringup at its top: a node's
first trial pays for the trial path's modules only when it runs it, not for the driver's
executor, store and planner as well. On 2 shared cores with four nodes starting workers at
once, each module a worker loads delays every node's first engine launch.

:func:`remote_trial` is a Ray streaming generator: it yields each stage change as it happens
(:class:`Posted`, progress only) and, last, the outcome (:class:`Finished`: the result as
JSON, the reference answers it collected, whether it reused a decided verdict instead of
launching, and where it ran). The driver reads the stream; no actor holds the progress,
so no node starts a worker process for one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bringup.plan.base import PlannedTrial
    from bringup.spec import Spec
    from bringup.trial import TrialRun
    from bringup.verdict import Stage, TrialResult


@dataclass
class Placed:
    """Where a task ran: the node, and the fingerprint taken there."""

    node: str
    fingerprint: dict[str, Any]  # the row's fingerprint key is derived from it


@dataclass
class Posted:
    """A stage change of the running trial (progress: the outcome carries everything)."""

    result_json: str
    message: str


@dataclass
class Finished:
    """The task's last item."""

    result_json: str
    answers: dict[str, Any] | None
    reused: str | None  # "reused": a verdict decided on this fingerprint, nothing launched
    placed: Placed


def remote_trial(
    spec: Spec,
    planned: PlannedTrial,
    trial_id: str,
    run_dir: str,
    reference: dict[str, Any] | None,
    collect_reference: bool,
    decode_tok_s: float | None,
    decided: dict[str, str],
    adopt: bool,
    api_key: str | None,
) -> Iterator[Posted | Finished]:
    """Run on the node Ray placed it: the trial, start to teardown, each stage change
    yielded as it comes and the outcome last."""
    from bringup import fingerprint as fp
    from bringup.engines.registry import get_engine

    adapter = get_engine(spec.engine.name)
    _version, finger = fp.engine_fingerprint(spec, adapter)
    key = fp.fingerprint_key(finger)
    placed = Placed(node_name(), finger)
    if key in decided:
        yield Finished(decided[key], None, "reused", placed)
        return

    from bringup.checks.reference import ReferenceAnswers
    from bringup.trial import TrialContext, run_trial

    posts: list[Posted] = []
    posted = asyncio.Event()

    def on_stage(result: TrialResult, stage: Stage, message: str) -> None:
        posts.append(Posted(result.model_dump_json(), message))
        posted.set()

    Path(run_dir).mkdir(parents=True, exist_ok=True)
    ctx = TrialContext(
        spec,
        adapter,
        Path(run_dir),
        adopt=adopt,
        reference=ReferenceAnswers.from_dict(reference) if reference else None,
        collect_reference=collect_reference,
        on_stage=on_stage,
        api_key=api_key,
        decode_tok_s=decode_tok_s,
        timeout_scale=planned.timeout_scale,
    )
    # the trial runs on this thread's loop in steps, each until it posts or ends, so that
    # its posts are yielded while it runs; the runner turns Ray's cancel (an interrupt of
    # this thread) into the trial's cancellation, as asyncio.run would
    with asyncio.Runner() as runner:
        trial = runner.get_loop().create_task(run_trial(ctx, planned, trial_id))
        try:
            while not trial.done():
                runner.run(_until_posted(trial, posted))
                yield from _drain(posts)
        except BaseException:
            trial.cancel()  # interrupted (ray.cancel): the trial tears its engine down
            with contextlib.suppress(BaseException):
                runner.run(_settled(trial))
            raise
        run: TrialRun = trial.result()
    yield from _drain(posts)
    answers = run.answers.to_dict() if run.answers is not None else None
    yield Finished(run.result.model_dump_json(), answers, None, placed)


async def _until_posted(trial: asyncio.Task[Any], posted: asyncio.Event) -> None:
    waiter = asyncio.ensure_future(posted.wait())
    try:
        await asyncio.wait({trial, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        posted.clear()


async def _settled(trial: asyncio.Task[Any]) -> None:
    await asyncio.wait({trial})


def _drain(posts: list[Posted]) -> Iterator[Posted]:
    while posts:
        yield posts.pop(0)


def node_name() -> str:
    """The node this task runs on: its address and Ray's node id (several nodes may share
    an address). Read from the task's own context: no round trip to the cluster."""
    import ray

    node_id = str(ray.get_runtime_context().get_node_id())
    address = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
    return f"{address}/{node_id[:8]}"
