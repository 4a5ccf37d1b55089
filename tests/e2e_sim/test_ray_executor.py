"""The Ray executor on a real local Ray cluster: a head and a second node started with
``ray start`` on this machine, each offering one ``sim_gpu`` (a custom resource standing in
for a GPU), sweeping the simulated engine two trials at a time.

The cluster is :class:`bringup.testing.raycluster.LocalRayCluster`.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bringup.store import Store
from bringup.sweep import SweepOptions, prepare, run_sweep
from bringup.testing.raycluster import LocalRayCluster
from bringup.verdict import Status

from .conftest import example_spec, world_verdict

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Path]]]:
    logs = tmp_path_factory.mktemp("ray")
    local = LocalRayCluster(logs)
    try:
        local.start(nodes=2, resources={"sim_gpu": 1})
        yield local.address, [logs / "head.log", logs / "node1.log"]
    finally:
        if ray.is_initialized():
            ray.shutdown()
        local.stop()


def test_sweep_runs_two_at_a_time_on_two_nodes_with_the_local_verdicts(
    cluster: tuple[str, list[Path]], tmp_path: Path
) -> None:
    address, _ = cluster
    spec, world = example_spec("vllm-attention-kv-seqs", "example_vllm_qwen3_8b_sm120", tmp_path)
    spec.plan.planner = "grid"
    spec.resources.resource = "sim_gpu"
    spec.resources.gpus = 1
    store = Store(tmp_path / "bringup.db")
    options = SweepOptions(runs_dir=str(tmp_path / "runs"), executor="ray", address=address)
    outcome = asyncio.run(run_sweep(prepare(spec), store, options))

    decided = [r for r in outcome.results if r.status in (Status.PASSED, Status.FAILED)]
    assert len(decided) == len(spec.configs())
    for result in decided:
        truth = world_verdict(world, spec, result.flags)
        got = result.failure.category if result.failure else None
        assert got == truth.category, (result.flags, got, truth.category)
    rows = store.trials(outcome.run_id)
    nodes = {row.node for row in rows}
    assert None not in nodes and len(nodes) == 2, nodes  # both nodes ran trials
    # two trials overlapped in time: the second node was not left idle
    spans = sorted((row.started, row.updated) for row in rows)
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans))
    assert outcome.winner is not None


def test_a_killed_worker_interrupts_its_trial_and_the_trial_runs_again(
    cluster: tuple[str, list[Path]], tmp_path: Path
) -> None:
    """A worker lost mid-trial is not a verdict: the row says interrupted, then re-queued."""
    address, _ = cluster
    spec, _world = example_spec("vllm-attention-kv-seqs", "example_vllm_qwen3_8b_sm120", tmp_path)
    spec.plan.planner = "grid"
    spec.plan.max_trials = 2
    spec.resources.resource = "sim_gpu"
    spec.resources.gpus = 1
    store = Store(tmp_path / "bringup.db")
    options = SweepOptions(runs_dir=str(tmp_path / "runs"), executor="ray", address=address)
    killed: list[int] = []

    async def sweep_and_kill() -> object:
        task = asyncio.ensure_future(run_sweep(prepare(spec), store, options))
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline and not task.done():
            await asyncio.sleep(0.2)
            for row in store.trials():
                if row.pid and row.status is Status.RUNNING and not killed:
                    # the engine's parent is the Ray worker running the trial: kill that
                    # worker (a process this test's cluster started), not the engine
                    worker = _parent_pid(row.pid)
                    if worker:
                        os.kill(worker, signal.SIGKILL)
                        killed.append(worker)
        return await task

    outcome = asyncio.run(sweep_and_kill())
    assert killed, "no running trial was seen to kill its worker"
    notes = [row.note or "" for row in store.trials()]
    results = outcome.results  # type: ignore[attr-defined]
    assert all(r.status in (Status.PASSED, Status.FAILED) for r in results), [
        (r.status, r.note) for r in results
    ]
    assert not any("worker lost" in n and "given up" in n for n in notes)


def _parent_pid(pid: int) -> int | None:
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None
