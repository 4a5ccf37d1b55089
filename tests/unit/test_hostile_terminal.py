"""What an engine or a server says reaches the terminal with its control characters
spelled out, and rich markup in values is shown as written: sweep, report, probe, watch,
diagnose and bench."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.testing.hostile import sim_spec

ESC = "\x1b"
CLEAR_AND_TITLE = "\x1b[2J\x1b]0;pwned\x07"
MARKUP = ["[/]", "[bold red]x[/bold red]", "[link=file:///etc/passwd]y"]

SERVER = textwrap.dedent(
    """
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    BAD = "\\x1b[2J\\x1b]0;pwned\\x07 [/] [bold red]"
    class H(BaseHTTPRequestHandler):
        def _send(self, code, body):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        def do_GET(self):
            if self.path.startswith("/v1/models"):
                self._send(200, json.dumps({"data": [{"id": BAD}]}))
            else:
                self._send(503, BAD)
        def do_POST(self):
            self._send(500, json.dumps({"error": BAD}))
        def log_message(self, *a):
            pass
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
    """
)


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, res.output


def _clean(out: str) -> None:
    assert ESC not in out and "\x07" not in out and "\x9b" not in out, repr(out[-400:])
    assert "Traceback" not in out and "MarkupError" not in out


@pytest.fixture
def hostile_server() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_sweep_and_report_show_hostile_values_literally(tmp_path: Path) -> None:
    # one measurement each: which value wins must not hang on the machine's load
    spec = sim_spec(
        tmp_path, space={"--alias": [*MARKUP, CLEAR_AND_TITLE]}, extra="[plan]\nmax_samples = 1\n"
    )
    db = str(tmp_path / "b.db")
    code, out = _run("sweep", str(spec), "--db", db, "--runs-dir", str(tmp_path / "runs"))
    assert code == 0, out
    _clean(out)
    assert "[/]" in out and "\\x1b[2J" in out and "launch command:" in out
    code, out = _run("report", "--db", db)
    assert code == 0
    _clean(out)
    assert "[bold red]x[/bold red]" in out


def test_probe_and_watch_neutralise_what_the_server_says(hostile_server: str) -> None:
    code, out = _run("probe", hostile_server, "--timeout", "5")
    assert code == 1
    _clean(out)
    code, out = _run("watch", hostile_server, "--interval", "0.1", "--count", "1")
    _clean(out)
    assert "pwned" in out or "503" in out  # the answer is shown, spelled out


def test_bench_neutralises_error_examples(hostile_server: str) -> None:
    t0 = time.monotonic()
    code, out = _run("bench", hostile_server, "--requests", "2", "--warmup", "0", "--timeout", "5")
    assert time.monotonic() - t0 < 120
    assert code == 1  # no request succeeded
    _clean(out)


def test_diagnose_neutralises_log_lines(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    oom = f"torch.OutOfMemoryError: CUDA out of memory [/] {CLEAR_AND_TITLE}"
    log.write_text(f"loading {CLEAR_AND_TITLE}\n{oom}\n")
    code, out = _run("diagnose", str(log))
    assert code == 0
    _clean(out)
    code, out = _run("diagnose", str(log), "--json")
    _clean(out)
    assert CLEAR_AND_TITLE in json.loads(out)["evidence"][0]  # JSON keeps it, escaped
