"""A real Ray cluster on this machine, for tests and benchmarks: a head and further nodes,
each started with ``ray start --block`` in a process group of its own and offering custom
resources (``sim_gpu`` stands in for a GPU); a node may run with its own environment, e.g.
an ``nvidia-smi`` that names another GPU (:func:`fake_gpu_path`), so that nodes of one
machine have different fingerprints.

Teardown signals those process groups by PID, never ``ray stop`` (which ends every Ray
process on the machine, other users' included).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bringup.server.ports import free_port

RAY = str(Path(sys.executable).with_name("ray"))


@dataclass
class NodeSetup:
    """What one node offers beyond the common resources, and the environment it runs in."""

    resources: dict[str, float] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


def fake_gpu_path(folder: Path, name: str, compute_capability: str) -> str:
    """A PATH whose ``nvidia-smi`` reports one GPU ``name``: a node's fingerprint then says
    that GPU (bringup reads GPUs from ``nvidia-smi``; Ray's own detection never calls it)."""
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    row = f"{name}, {compute_capability}, 570.86.15, 81559 MiB"
    smi.write_text(f"#!/bin/sh\necho '{row}'\n", encoding="utf-8")
    smi.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


@dataclass
class LocalRayCluster:
    logs: Path
    address: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(
        self,
        nodes: int,
        resources: dict[str, float],
        cpus: int = 1,
        per_node: list[NodeSetup] | None = None,
    ) -> LocalRayCluster:
        """``per_node[i]`` adds resources and environment to node ``i`` (0 is the head)."""
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        setups = list(per_node or []) + [NodeSetup()] * nodes

        def own(i: int) -> list[str]:
            both = resources | setups[i].resources
            return ["--num-cpus", str(cpus), "--resources", json.dumps(both)]

        head = ["--head", "--port", str(port), "--include-dashboard", "false"]
        self._node(head + own(0), "head", setups[0].env)
        self.wait_alive(1, 180)
        for i in range(1, nodes):
            # one at a time: nodes started together on one address race for the same ports
            self._node(["--address", self.address, *own(i)], f"node{i}", setups[i].env)
            self.wait_alive(i + 1, 180)
        return self

    def _node(self, args: list[str], name: str, extra_env: dict[str, str]) -> None:
        # a node's workers inherit its environment: what a node of other hardware would see
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0") | extra_env
        self.logs.mkdir(parents=True, exist_ok=True)
        with (self.logs / f"{name}.log").open("wb") as out:
            self.procs.append(
                subprocess.Popen(
                    [
                        RAY,
                        "start",
                        "--block",
                        "--disable-usage-stats",
                        "--node-ip-address",
                        "127.0.0.1",
                        *args,
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )

    def wait_alive(self, want: int, timeout_s: float) -> None:
        probe = (
            "import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False);"
            "print(sum(1 for n in ray.nodes() if n['Alive']))"
        )
        deadline = time.monotonic() + timeout_s
        seen = ""
        while time.monotonic() < deadline:
            out = subprocess.run(
                [sys.executable, "-c", probe, self.address],
                capture_output=True,
                text=True,
                timeout=120,
            )
            lines = out.stdout.strip().splitlines()
            seen = lines[-1] if lines else out.stderr[-300:]
            if seen == str(want):
                return
            time.sleep(2)
        raise RuntimeError(f"the local Ray cluster did not reach {want} nodes: {seen}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
        self.procs.clear()
