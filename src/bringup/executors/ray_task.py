"""What runs on a Ray node: one trial, start to teardown, and the progress board.

A fresh Ray worker unpickles a task's function (and the board's class) by importing the
module that defines it, before the task can start. So this module imports nothing of
bringup at its top: a node's first trial pays for the trial path's modules only when it
runs it, not for the driver's executor, store and planner as well. On 2 shared cores with
four nodes starting workers at once, each module a worker loads delays every node's first
engine launch.

:func:`remote_trial` returns the result as JSON, the reference answers it collected, whether
it reused a decided verdict instead of launching, and where it ran (:class:`Placed`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bringup.plan.base import PlannedTrial
    from bringup.spec import Spec
    from bringup.verdict import Stage, TrialResult


@dataclass
class Placed:
    """What a task reports back besides the result."""

    node: str
    fingerprint: dict[str, Any]  # the row's fingerprint key is derived from it


def remote_trial(
    spec: Spec,
    planned: PlannedTrial,
    trial_id: str,
    run_dir: str,
    reference: dict[str, Any] | None,
    collect_reference: bool,
    decode_tok_s: float | None,
    decided: dict[str, str],
    board: Any,
    adopt: bool,
    api_key: str | None,
) -> tuple[str, dict[str, Any] | None, str | None, Placed]:
    """Run on the node Ray placed it: the trial, start to teardown. Returns the result as
    JSON, the reference answers it collected, the trial it reused (if any) and the node."""
    from bringup import fingerprint as fp
    from bringup.engines.registry import get_engine

    adapter = get_engine(spec.engine.name)
    _version, finger = fp.engine_fingerprint(spec, adapter)
    key = fp.fingerprint_key(finger)
    placed = Placed(node_name(), finger)
    if key in decided:
        return decided[key], None, "reused", placed

    from bringup.checks.reference import ReferenceAnswers
    from bringup.trial import TrialContext, run_trial

    def on_stage(result: TrialResult, stage: Stage, message: str) -> None:
        board.post.remote(trial_id, result.model_dump_json(), message)

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
    trial = asyncio.run(run_trial(ctx, planned, trial_id))
    answers = trial.answers.to_dict() if trial.answers is not None else None
    return trial.result.model_dump_json(), answers, None, placed


def node_name() -> str:
    """The node this task runs on: its address and Ray's node id (several nodes may share
    an address). Read from the task's own context: no round trip to the cluster."""
    import ray

    node_id = str(ray.get_runtime_context().get_node_id())
    address = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
    return f"{address}/{node_id[:8]}"


class Board:
    """Stage changes posted by tasks, drained by the driver (a Ray actor)."""

    def __init__(self) -> None:
        self.posts: dict[str, list[tuple[str, str]]] = {}

    def post(self, trial_id: str, result_json: str, message: str) -> None:
        self.posts.setdefault(trial_id, []).append((result_json, message))

    def take(self, trial_id: str) -> list[tuple[str, str]]:
        return self.posts.pop(trial_id, [])
