"""The real llama-server, two trials at a time, on a real local Ray cluster: a head and a
second node started with ``ray start`` on this machine, each offering one ``sim_gpu`` (a
custom resource standing in for a GPU), every trial asking for one.

Each trial launches, checks and benchmarks llama-server with Gemma 3 270M on the node Ray
placed it on; the driver alone writes the store. Cluster processes are ended by process
group (:class:`~bringup.testing.raycluster.LocalRayCluster`), never ``ray stop``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from bringup.spec import Spec
from bringup.store import Store
from bringup.sweep import SweepOptions, prepare, run_sweep
from bringup.testing.raycluster import LocalRayCluster
from bringup.verdict import Category, Status

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    local = LocalRayCluster(tmp_path_factory.mktemp("ray"))
    try:
        local.start(nodes=2, resources={"sim_gpu": 1})
        yield local.address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        local.stop()


def test_llama_server_sweeps_two_at_a_time_on_two_nodes(
    address: str, spec_factory: Callable[..., Spec], gemma_path: str, tmp_path: Path
) -> None:
    spec = spec_factory(gemma_path, '[resources]\nresource = "sim_gpu"\ngpus = 1\n')
    spec.plan.planner = "grid"
    store = Store(tmp_path / "bringup.db")
    options = SweepOptions(runs_dir=str(tmp_path / "runs"), executor="ray", address=address)
    outcome = asyncio.run(run_sweep(prepare(spec), store, options))

    by_flags = {(r.flags["--flash-attn"], r.flags["--cache-type-v"]): r for r in outcome.results}
    assert len(by_flags) == 4 and all(
        r.status in (Status.PASSED, Status.FAILED) for r in outcome.results
    ), [(r.flags, r.status, r.note) for r in outcome.results]
    # what llama-server refuses is diagnosed on the node as it is here
    refused = by_flags[("off", "q8_0")]
    assert refused.failure is not None and refused.failure.category is Category.INVALID_CONFIG
    for key in [("off", "f16"), ("on", "f16"), ("on", "q8_0")]:
        result = by_flags[key]
        assert result.status is Status.PASSED, (key, result.failure)
        assert result.metrics["output_tok_s"] > 0 and result.metrics["ttft_p50_ms"] > 0
    assert outcome.winner is not None

    rows = store.trials(outcome.run_id)
    assert len({row.node for row in rows} - {None}) == 2, [row.node for row in rows]
    spans = sorted((row.started, row.updated) for row in rows)
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans)), spans  # two at once
    # every engine a trial launched was stopped by its trial, on whichever node
    for row in rows:
        if row.pid:
            try:
                proc = psutil.Process(row.pid)
                gone = proc.status() == psutil.STATUS_ZOMBIE or "llama" not in proc.name()
            except psutil.NoSuchProcess:
                gone = True
            assert gone, (row.pid, row.flags)
