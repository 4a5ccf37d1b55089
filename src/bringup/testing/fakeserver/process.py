"""Run the fake server in its own process, so it never shares a core with the client.

``with FakeServerProcess(FakeServerConfig(...)) as fake: fake.url`` starts
``python -m bringup.testing.fakeserver`` on a free loopback port, waits for its
``listening`` line and ends it by its PID on exit. ``stats()`` and ``reset_stats()`` read
and zero the server's own counters. ``niceness`` (e.g. -10: a higher priority than the
client's, so that a busy machine delays the client and not the server the client is timing)
is applied once it listens; a negative one needs root or CAP_SYS_NICE, else ``start`` raises
``PermissionError``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import urllib.request
from typing import Any

from bringup.testing.fakeserver.server import FakeServerConfig


def config_argv(cfg: FakeServerConfig) -> list[str]:
    """The config as ``--json`` for ``python -m bringup.testing.fakeserver``."""
    return ["--json", json.dumps(dataclasses.asdict(cfg))]


class FakeServerProcess:
    def __init__(
        self,
        config: FakeServerConfig | None = None,
        *,
        start_timeout_s: float = 30.0,
        niceness: int | None = None,
    ):
        self.config = config or FakeServerConfig()
        self.start_timeout_s = start_timeout_s
        self.niceness = niceness
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> FakeServerProcess:
        argv = [sys.executable, "-m", "bringup.testing.fakeserver", "--port", "0"]
        self.proc = subprocess.Popen(
            argv + config_argv(self.config), stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # "listening http://127.0.0.1:PORT"
        if not line.startswith("listening "):
            self.stop()
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])
        if self.niceness is not None:
            try:
                os.setpriority(os.PRIO_PROCESS, self.proc.pid, self.niceness)
            except OSError:
                self.stop()
                raise
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def _get(self, method: str) -> dict[str, Any]:
        req = urllib.request.Request(
            f"{self.url}/stats", method=method, data=b"" if method == "POST" else None
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            data: dict[str, Any] = json.loads(resp.read())
        return data

    def stats(self) -> dict[str, Any]:
        return self._get("GET")

    def reset_stats(self) -> dict[str, Any]:
        return self._get("POST")

    def __enter__(self) -> FakeServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
