"""``bringup probe``: a silent answer from a working server is ``slow``, from an idle one a hang.

The servers run in their own processes (a server in the test's own process is judged by
silence alone: its CPU time is the test's); each answers ``/health`` at once and holds the
completion, computing (slow) or sleeping (stuck).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from bringup.checks.probe import SLOW_EXIT, run_probe
from bringup.cli.probe_cmd import probe
from bringup.cli.watch_cmd import watch

_SERVER = """
import sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BUSY = sys.argv[1] == "busy"

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        end = time.monotonic() + 600
        while time.monotonic() < end:
            if not BUSY:
                time.sleep(1)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
print(srv.server_address[1], flush=True)
srv.serve_forever()
"""


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, request.param], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())  # listening: its start-up CPU is behind it
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill()  # the server this test started, by its PID
        proc.wait()


@pytest.mark.parametrize("server", ["busy"], indirect=True)
async def test_a_silent_answer_from_a_computing_server_is_slow(server: str) -> None:
    res = await run_probe(server, timeout_s=3)
    assert not res.passed and res.health_status == 200
    assert res.verdict.startswith("slow: /health 200"), res.verdict
    assert res.slow_s is not None and res.hang_s is None and res.engine_pid is not None
    assert res.progress is not None and "CPU-s" in res.progress


@pytest.mark.parametrize("server", ["idle"], indirect=True)
async def test_a_silent_answer_from_an_idle_server_is_a_hang(server: str) -> None:
    res = await run_probe(server, timeout_s=3)
    assert not res.passed and res.health_status == 200
    assert res.verdict.startswith("hang: /health 200 but no token"), res.verdict
    assert res.hang_s is not None and res.slow_s is None and res.engine_pid is not None
    assert res.progress is not None and "used 0.0" in res.progress


@pytest.mark.parametrize(
    ("server", "verdict", "code"),
    [("busy", "slow:", SLOW_EXIT), ("idle", "hang:", 1)],
    indirect=["server"],
)
def test_slow_and_hang_exit_differently(server: str, verdict: str, code: int) -> None:
    result = CliRunner().invoke(probe, [server, "--timeout", "3"])
    assert result.output.startswith(verdict), result.output
    assert result.exit_code == code
    assert SLOW_EXIT not in (0, 1, 2)  # not a pass, a plain failure or a user mistake


@pytest.mark.parametrize(
    ("server", "verdict", "code"),
    [("busy", "slow:", SLOW_EXIT), ("idle", "hang:", 1)],
    indirect=["server"],
)
def test_watch_never_trips_on_a_slow_server_and_says_so(
    server: str, verdict: str, code: int
) -> None:
    args = [server, "--interval", "0", "--failures", "1", "--count", "2", "--timeout", "3"]
    result = CliRunner().invoke(watch, args)
    probes = [ln for ln in result.output.splitlines() if ln.split()[1:2] == [server]]
    if verdict == "slow:":
        # two slow probes with --failures 1: the count ran out, nothing tripped
        assert len(probes) == 2 and all(f" {verdict}" in ln for ln in probes), result.output
        assert "consecutive failed probes" not in result.output
    else:
        # one idle silence is a hang, a failure: it trips at once
        assert len(probes) == 1 and f" {verdict}" in probes[0], result.output
    assert result.exit_code == code
