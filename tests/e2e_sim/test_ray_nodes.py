"""The Ray executor over nodes of different hardware, and Ctrl-C of its driver, on a real
local cluster: a head that reports an H100 and a second node that reports an H200 (each an
``nvidia-smi`` on the node's PATH, :func:`~bringup.testing.raycluster.fake_gpu_path`), each
offering one ``sim_gpu`` and its ``accelerator_type`` resource, sweeping the simulated
engine. Cluster processes are ended by process group, never ``ray stop``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bringup.plan.matrix import compatibility_matrix
from bringup.spec import Spec, load_spec
from bringup.store import Store
from bringup.store.rows import TrialRow
from bringup.sweep import SweepOptions, prepare, run_sweep
from bringup.testing.hostile import SPEED, sim_spec
from bringup.testing.raycluster import LocalRayCluster, NodeSetup, fake_gpu_path
from bringup.verdict import Status

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

GPUS = {"H100": "NVIDIA H100 80GB HBM3", "H200": "NVIDIA H200"}


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("raynodes")
    setups = [
        NodeSetup(
            resources={f"accelerator_type:{kind}": 1},
            env={"PATH": fake_gpu_path(root / kind, name, "9.0")},
        )
        for kind, name in GPUS.items()
    ]
    local = LocalRayCluster(root / "logs")
    try:
        local.start(nodes=2, resources={"sim_gpu": 1}, per_node=setups)
        yield local.address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        local.stop()


def _spec(folder: Path, values: int, startup_s: float | None = None) -> Spec:
    path = sim_spec(
        folder,
        space={"--max-batch": list(range(1, values + 1))},
        startup_s=None if startup_s is None else startup_s * SPEED,
    )
    spec = load_spec(path)
    spec.plan.planner = "grid"
    spec.resources.resource = "sim_gpu"
    spec.resources.gpus = 1
    return spec


def _gpu(row: TrialRow) -> str:
    return str(row.fingerprint["gpus"][0]["name"])


def _sweep(spec: Spec, store: Store, address: str, folder: Path, gpu_type: str | None) -> str:
    spec.resources.gpu_type = gpu_type
    options = SweepOptions(runs_dir=str(folder / "runs"), executor="ray", address=address)
    return asyncio.run(run_sweep(prepare(spec), store, options)).run_id


def _rows(store: Store, run_id: str) -> list[TrialRow]:
    return [r for r in store.iter_all_trials() if r.run_id == run_id]


def test_verdicts_are_reused_only_on_their_own_fingerprint(address: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, 4)
    store = Store(tmp_path / "bringup.db")
    # every configuration decided on the H100 node only
    first = _rows(store, _sweep(spec, store, address, tmp_path, "H100"))
    assert {_gpu(r) for r in first} == {GPUS["H100"]}, [r.node for r in first]
    assert all(r.status is Status.PASSED and not r.reused_from for r in first)

    # on the H200 node nothing decided on the H100 one stands: every trial runs
    second = _rows(store, _sweep(spec, store, address, tmp_path, "H200"))
    assert {_gpu(r) for r in second} == {GPUS["H200"]}
    assert len(second) == 4 and not any(r.reused_from for r in second), [r.note for r in second]
    assert all(r.pid for r in second)  # launched there
    assert {r.fingerprint_key for r in first}.isdisjoint({r.fingerprint_key for r in second})

    # anywhere: each trial reuses the verdict of its own node's fingerprint, never the other
    third = _rows(store, _sweep(spec, store, address, tmp_path, None))
    assert len(third) == 4 and all(r.reused_from for r in third), [r.note for r in third]
    for row in third:
        prior = store.trial(row.reused_from or "")
        assert prior is not None and prior.fingerprint_key == row.fingerprint_key, row.note

    # one matrix with a column per GPU
    columns = compatibility_matrix(store.iter_all_trials()).columns
    assert sorted(c.split(" (")[0] for c in columns) == [f"1x {n}" for n in GPUS.values()]


def test_ctrl_c_of_the_driver_interrupts_its_trials_ends_their_engines_and_resumes(
    address: str, tmp_path: Path
) -> None:
    spec_path = sim_spec(tmp_path, space={"--max-batch": [1, 2]}, startup_s=40.0 * SPEED)
    db = tmp_path / "bringup.db"
    argv = [
        sys.executable,
        "-c",
        "from bringup.cli.main import main; main()",
        "sweep",
        str(spec_path),
        "--db",
        str(db),
        "--runs-dir",
        str(tmp_path / "runs"),
        "--executor",
        "ray",
        "--address",
        address,
        "--planner",
        "grid",
    ]
    env = dict(os.environ, COLUMNS="200")
    log = (tmp_path / "driver.log").open("wb")
    driver = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    engines: list[int] = []
    try:
        # both trials launched their engines (each still starting: 40 s of simulated start-up)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and len(engines) < 2:
            time.sleep(0.5)
            if db.exists():
                engines = [
                    r.pid for r in Store(db).trials() if r.pid and r.status is Status.RUNNING
                ]
        assert len(engines) == 2, (tmp_path / "driver.log").read_text()
        driver.send_signal(signal.SIGINT)
        code = driver.wait(60)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        log.close()
    out = (tmp_path / "driver.log").read_text()
    assert code == 130 and "interrupted; engines stopped" in out, out
    # no engine left on any node within 10 s (the trial tears its group down on cancel)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in engines):
        time.sleep(0.2)
    assert not [pid for pid in engines if _alive(pid)], engines
    rows = Store(db).trials()
    assert len(rows) == 2 and all(r.status is Status.INTERRUPTED for r in rows), [
        (r.status, r.note) for r in rows
    ]

    # the same command again resumes: both configurations run to a verdict
    short = spec_path.parent / "world.toml"
    short.write_text(
        short.read_text(encoding="utf-8").replace(
            f"startup_s = {40.0 * SPEED}", f"startup_s = {0.3 * SPEED}"
        ),
        encoding="utf-8",
    )
    again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    latest = Store(db).run()
    assert latest is not None
    decided = [r for r in Store(db).trials(latest["id"]) if r.status is Status.PASSED]
    assert sorted(json.dumps(r.flags) for r in decided) == [
        json.dumps({"--max-batch": 1}),
        json.dumps({"--max-batch": 2}),
    ]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
