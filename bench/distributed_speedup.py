"""The same simulated sweep with the local executor and with Ray over N local nodes.

Each trial's length is fixed by the simulated engine's start-up (``--startup-s``, real
seconds), so the wall time of the sweep is what the executor's parallelism makes of it.
The Ray cluster is real (``ray start`` head plus N-1 nodes on this machine, each offering
one ``sim_gpu``); every trial asks for one.

The Ray run pays fixed costs the local one does not: importing Ray and joining the
cluster, a worker process per node and its imports before that node's first launch, all
on this machine's shared cores. Over a sweep of ``trials`` trials those costs count once,
so the speedup grows with the trial's length. The default start-up (20 s, a trial of
about 21 s) is still shorter than any real trial measured here (llama-server trials of
24-35 s; vLLM's start-up alone 64-98 s on the H200); ``--startup-s 4`` gives the
worst case these fixed costs make. ``overhead_s`` is the Ray run's wall time beyond a
perfect split of the local run's (``local_s * ceil(trials / nodes) / trials``).

Prints, last:

    speedup=<float> nodes=<int> same_verdicts=<bool>
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from pathlib import Path

from bringup.spec import load_spec
from bringup.store import Store
from bringup.sweep import SweepOptions, prepare, run_sweep
from bringup.testing.hostile import SPEED, sim_spec
from bringup.testing.raycluster import LocalRayCluster

Verdicts = dict[str, tuple[str, str | None]]


def _sweep(
    spec_path: Path, work: Path, executor: str, address: str | None
) -> tuple[float, Verdicts]:
    spec = load_spec(spec_path)
    spec.plan.planner = "grid"
    spec.resources.resource = "sim_gpu"
    spec.resources.gpus = 1
    store = Store(work / f"{executor}.db")
    options = SweepOptions(runs_dir=str(work / "runs"), executor=executor, address=address)
    started = time.monotonic()
    outcome = asyncio.run(run_sweep(prepare(spec), store, options))
    elapsed = time.monotonic() - started
    verdicts = {
        str(sorted(r.flags.items())): (
            r.status.value,
            r.failure.category.value if r.failure else None,
        )
        for r in outcome.results
    }
    return elapsed, verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--startup-s", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec_path = sim_spec(
            work,
            space={"--max-batch": list(range(1, args.trials + 1))},
            startup_s=args.startup_s * SPEED,
        )
        local_s, local = _sweep(spec_path, work, "local", None)
        print(f"local: {len(local)} trials in {local_s:.1f} s", flush=True)
        cluster = LocalRayCluster(work / "ray")
        try:
            cluster.start(nodes=args.nodes, resources={"sim_gpu": 1})
            ray_s, remote = _sweep(spec_path, work, "ray", cluster.address)
        finally:
            import ray

            if ray.is_initialized():
                ray.shutdown()
            cluster.stop()
        print(f"ray over {args.nodes} nodes: {len(remote)} trials in {ray_s:.1f} s", flush=True)
    ideal = local_s * math.ceil(args.trials / args.nodes) / args.trials
    print(
        f"startup_s={args.startup_s:g} local_per_trial_s={local_s / args.trials:.2f} "
        f"overhead_s={ray_s - ideal:.2f}"
    )
    same = local == remote
    if not same:
        for key in sorted(set(local) | set(remote)):
            if local.get(key) != remote.get(key):
                print(f"differs: {key}: local {local.get(key)} ray {remote.get(key)}")
    print(f"speedup={local_s / ray_s:.2f} nodes={args.nodes} same_verdicts={same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
