"""A real Ray cluster on this machine, for tests and benchmarks: a head and further nodes,
each started with ``ray start --block`` in a process group of its own and offering custom
resources (``sim_gpu`` stands in for a GPU).

Teardown signals those process groups by PID, never ``ray stop`` (which ends every Ray
process on the machine, other users' included).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalRayCluster:
    logs: Path
    address: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, nodes: int, resources: dict[str, float], cpus: int = 1) -> LocalRayCluster:
        port = _free_port()
        self.address = f"127.0.0.1:{port}"
        common = ["--num-cpus", str(cpus), "--resources", json.dumps(resources)]
        head = ["--head", "--port", str(port), "--include-dashboard", "false"]
        self._node(head + common, "head")
        self.wait_alive(1, 180)
        for i in range(1, nodes):
            # one at a time: nodes started together on one address race for the same ports
            self._node(["--address", self.address, *common], f"node{i}")
            self.wait_alive(i + 1, 180)
        return self

    def _node(self, args: list[str], name: str) -> None:
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
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
