"""CPU-seconds per trial of ``distributed_speedup.py``'s sweep, local and on Ray, by process.

Runs that benchmark's own sweep (same spec, trials and nodes) and reads CPU times (user +
system) instead of the wall clock, so it can be taken while others load the machine:

- local: this process and its reaped children (the engines), from ``getrusage``;
- Ray: every process of the local cluster and this driver, from psutil, before and after
  the sweep; a process's reaped children (a worker's engines) count as its ``engines``.
  The idle cluster's own rate, measured over ``--idle-s`` first, is also subtracted.

Prints one line per process kind, then, last:

    local_cpu_per_trial=<float> ray_cpu_per_trial=<float> ray_cpu_per_trial_less_idle=<float>
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psutil

Key = tuple[int, float]  # pid, start time: a pid may be reused during the run
Times = dict[Key, tuple[str, float, float]]  # kind, own CPU, reaped children's CPU


def _bench() -> Any:
    path = Path(__file__).with_name("distributed_speedup.py")
    spec = importlib.util.spec_from_file_location("distributed_speedup", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kind(proc: psutil.Process) -> str:
    if proc.pid == os.getpid():
        return "driver"
    cmd = " ".join(proc.cmdline()[:3])
    name = proc.name()
    if cmd.startswith(("ray::IDLE", "ray::remote_trial")):
        return "ray_task_worker"
    if cmd.startswith("ray::"):
        return "ray_agents"  # dashboard and runtime-env agents
    for daemon in ("gcs_server", "raylet", "log_monitor", "simengine"):
        if daemon in name or daemon in cmd:
            return daemon
    return "other"


def _times(roots: list[int]) -> Times:
    procs = [psutil.Process()]
    for pid in roots:
        try:
            root = psutil.Process(pid)
            procs += [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
    out: Times = {}
    for proc in procs:
        try:
            t = proc.cpu_times()
            key = (proc.pid, proc.create_time())
            out[key] = (_kind(proc), t.user + t.system, t.children_user + t.children_system)
        except psutil.Error:
            continue
    return out


def _by_kind(before: Times, after: Times) -> dict[str, list[float]]:
    """kind -> [own CPU, reaped children's CPU, processes]; gone processes are not counted
    (their parent reaped them: their time is in its children's)."""
    kinds: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for key, (kind, own, kids) in after.items():
        own0, kids0 = before[key][1:] if key in before else (0.0, 0.0)
        row = kinds[kind]
        row[0] += own - own0
        row[1] += kids - kids0
        row[2] += 1
    return dict(kinds)


def _rusage() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--startup-s", type=float, default=4.0)
    parser.add_argument("--idle-s", type=float, default=8.0)
    args = parser.parse_args()
    bench = _bench()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec_path = bench.sim_spec(
            work,
            space={"--max-batch": list(range(1, args.trials + 1))},
            startup_s=args.startup_s * bench.SPEED,
        )
        me0, kids0 = _rusage()
        local_s, local = bench._sweep(spec_path, work, "local", None)
        me1, kids1 = _rusage()
        local_cpu = (me1 - me0) + (kids1 - kids0)
        print(
            f"local: {len(local)} trials in {local_s:.1f} s; CPU-s: driver {me1 - me0:.2f},"
            f" engines {kids1 - kids0:.2f}",
            flush=True,
        )
        cluster = bench.LocalRayCluster(work / "ray")
        try:
            cluster.start(nodes=args.nodes, resources={"sim_gpu": 1})
            roots = [p.pid for p in cluster.procs]
            a = _times(roots)
            time.sleep(args.idle_s)
            idle = _by_kind(a, _times(roots))
            idle_rate = sum(o + k for kind, (o, k, _n) in idle.items() if kind != "driver")
            idle_rate /= args.idle_s
            a = _times(roots)
            ray_s, remote = bench._sweep(spec_path, work, "ray", cluster.address)
            ray = _by_kind(a, _times(roots))
        finally:
            import ray as ray_module

            if ray_module.is_initialized():
                ray_module.shutdown()
            cluster.stop()
    ray_cpu = sum(o + k for o, k, _n in ray.values())
    print(f"ray over {args.nodes} nodes: {len(remote)} trials in {ray_s:.1f} s; CPU-s by kind:")
    for kind, (own, kids, n) in sorted(ray.items()):
        print(f"  {kind:16s} processes={n:2.0f} own={own:6.2f} reaped_children={kids:6.2f}")
    print(f"idle cluster: {idle_rate:.3f} CPU-s per s; same_verdicts={local == remote}")
    less_idle = ray_cpu - idle_rate * ray_s
    print(
        f"local_cpu_per_trial={local_cpu / len(local):.3f}"
        f" ray_cpu_per_trial={ray_cpu / len(remote):.3f}"
        f" ray_cpu_per_trial_less_idle={less_idle / len(remote):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
