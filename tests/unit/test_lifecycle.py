"""Process, readiness and identity against small scripted engines (no real engine)."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from bringup.engines.base import EngineAdapter
from bringup.errors import RequestError
from bringup.server.identity import verify_identity
from bringup.server.ports import free_port
from bringup.server.process import EngineProcess
from bringup.server.readiness import wait_ready
from bringup.testing.hogs import Slack
from bringup.verdict import Category


class ScriptAdapter(EngineAdapter):
    name = "llama.cpp"


SERVE = textwrap.dedent(
    """
    import http.server, sys, time
    port = int(sys.argv[1]); delay = float(sys.argv[2]); t0 = time.time()
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = time.time() - t0 > delay
            self.send_response(200 if ok else 503); self.end_headers()
            self.wfile.write(b'{"status":"ok"}' if ok else b'loading')
        def log_message(self, *a): pass
    print("starting", flush=True)
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
    """
)


def spawn(tmp_path: Path, code: str, *args: str) -> EngineProcess:
    return EngineProcess([sys.executable, "-c", code, *args], tmp_path / "engine.log")


async def test_exit_is_a_verdict_within_a_second(tmp_path: Path, slack: Slack) -> None:
    code = (
        "import sys, time; time.sleep(0.3);"
        " print('error: invalid argument: --bogus', flush=True); sys.exit(1)"
    )
    proc = spawn(tmp_path, code)
    t0 = time.monotonic()
    out = await wait_ready(
        proc,
        ScriptAdapter(),
        f"http://127.0.0.1:{free_port()}",
        start_timeout_s=60,
        hang_timeout_s=60,
    )
    elapsed = time.monotonic() - t0
    assert not out.ready
    assert out.category is Category.INVALID_CONFIG
    assert any("invalid argument" in e for e in out.evidence)
    assert elapsed < 0.3 + 1.0 + slack(25)  # a second on a quiet machine
    proc.stop(1)


async def test_fatal_line_ends_wait_while_process_lingers(tmp_path: Path, slack: Slack) -> None:
    code = (
        "import time; print('llama_init_from_model: quantized V cache requires flash_attn"
        " to be enabled',"
        " flush=True); print('srv  llama_server: exiting due to model loading error', flush=True);"
        " time.sleep(60)"
    )
    proc = spawn(tmp_path, code)
    t0 = time.monotonic()
    out = await wait_ready(
        proc,
        ScriptAdapter(),
        f"http://127.0.0.1:{free_port()}",
        start_timeout_s=60,
        hang_timeout_s=60,
    )
    assert time.monotonic() - t0 < 3 + slack(25)
    assert proc.poll() is None  # still lingering: the log decided, not the exit
    assert out.category is Category.INVALID_CONFIG
    proc.stop(1)
    assert proc.poll() is not None


async def test_silent_log_is_a_hang(tmp_path: Path, slack: Slack) -> None:
    proc = spawn(tmp_path, "import time; print('loading weights', flush=True); time.sleep(60)")
    out = await wait_ready(
        proc,
        ScriptAdapter(),
        f"http://127.0.0.1:{free_port()}",
        start_timeout_s=120,
        # the interpreter's start-up comes before its first line: ten of them, measured now
        hang_timeout_s=max(1.0, slack(10)),
    )
    assert out.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert out.detail and "no log output" in out.detail
    assert "loading weights" in " ".join(out.evidence)
    proc.stop(1)


async def test_start_timeout(tmp_path: Path) -> None:
    code = "import time\nwhile True: print('tick', flush=True); time.sleep(0.2)"
    proc = spawn(tmp_path, code)
    out = await wait_ready(
        proc,
        ScriptAdapter(),
        f"http://127.0.0.1:{free_port()}",
        start_timeout_s=1.0,
        hang_timeout_s=60,
    )
    assert out.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert out.detail and "not ready after" in out.detail
    proc.stop(1)


async def test_ready_after_503_then_identity(tmp_path: Path) -> None:
    port = free_port()
    proc = spawn(tmp_path, SERVE, str(port), "0.8")
    out = await wait_ready(
        proc, ScriptAdapter(), f"http://127.0.0.1:{port}", start_timeout_s=30, hang_timeout_s=30
    )
    assert out.ready, out
    assert out.elapsed_s >= 0.8
    ident = verify_identity(proc.pid, port)
    assert ident.ours and ident.owner_pid == proc.pid
    # a server we did not launch on that port is not ours
    other = spawn(tmp_path, "import time; time.sleep(30)")
    assert not verify_identity(other.pid, port).ours
    other.stop(1)
    proc.stop(2)


def test_teardown_kills_group_after_grace(tmp_path: Path, slack: Slack) -> None:
    code = textwrap.dedent(
        """
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c",
            "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
        print(child.pid, flush=True)
        time.sleep(60)
        """
    )
    proc = spawn(tmp_path, code)
    deadline = time.time() + 10 + slack(100)
    while time.time() < deadline and not (tmp_path / "engine.log").read_text().strip():
        time.sleep(0.05)
    child_pid = int((tmp_path / "engine.log").read_text().split()[0])
    assert os.getpgid(child_pid) == proc.pgid != os.getpgid(0)
    t0 = time.monotonic()
    code_ = proc.stop(grace_s=0.5)
    assert code_ == -signal.SIGKILL
    assert time.monotonic() - t0 < 5 + slack(25)
    time.sleep(0.1)
    assert (
        not psutil.pid_exists(child_pid)
        or psutil.Process(child_pid).status() == psutil.STATUS_ZOMBIE
    )


def test_stop_only_signals_its_own_group(tmp_path: Path) -> None:
    bystander = EngineProcess(
        [sys.executable, "-c", "import time; time.sleep(30)"], tmp_path / "b.log"
    )
    proc = spawn(tmp_path, "import time; time.sleep(30)")
    proc.stop(1)
    assert bystander.poll() is None
    bystander.stop(1)


@pytest.mark.parametrize("code", [-9, 137])
def test_killed_process_classified(code: int) -> None:
    from bringup.diagnose import classify

    diag = classify("loading model\n", engine="llama.cpp", exit_code=code)
    assert diag.category is Category.OOM_HOST


def _timed_out() -> Exception:
    """What the client raises when a request gets no answer in time."""
    from bringup.http.session import no_response

    return no_response("POST", "/v1/completions", TimeoutError())


async def _trial_where_checks_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception, engine_code: str = SERVE
) -> object:
    import bringup.trial_checks as trial_mod
    from bringup.plan.base import PlannedTrial
    from bringup.spec import parse_spec
    from bringup.trial import TrialContext, run_trial

    class ServeAdapter(ScriptAdapter):
        def build_command(self, spec, flags, host, port):  # type: ignore[no-untyped-def]
            return [sys.executable, "-c", engine_code, str(port), "0"]

    async def broken(*a: object, **k: object) -> None:
        raise error

    monkeypatch.setattr(trial_mod, "run_correctness", broken)
    spec = parse_spec('[engine]\nname = "llama.cpp"\n[model]\npath = "m"\n')
    run = await run_trial(TrialContext(spec, ServeAdapter(), tmp_path), PlannedTrial({}), "t")
    r = run.result
    assert (r.pid is not None and not psutil.pid_exists(r.pid)) or (
        psutil.Process(r.pid).status() == psutil.STATUS_ZOMBIE
    )
    return r


async def test_timeout_of_an_idle_live_engine_is_stalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that stops answering during the checks fails the trial; nothing aborts.
    Alive, using no CPU and writing nothing: stalled, a transient verdict."""
    from bringup.verdict import Stage, Status

    r = await _trial_where_checks_fail(tmp_path, monkeypatch, _timed_out())
    assert r.status is Status.FAILED and r.failure is not None  # type: ignore[attr-defined]
    f = r.failure  # type: ignore[attr-defined]
    assert f.stage is Stage.CORRECT
    assert f.category is Category.STALLED and f.transient
    assert "timed out" in f.evidence[0] and "CPU-s" in f.evidence[-1]


# an engine that answers health and keeps computing: slow, not dead
BUSY_SERVE = SERVE.replace(
    'print("starting", flush=True)',
    "import threading\ndef spin():\n    while True:\n        pass\n"
    'threading.Thread(target=spin, daemon=True).start()\nprint("starting", flush=True)',
)


async def test_timeout_of_a_working_engine_is_slow_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = await _trial_where_checks_fail(tmp_path, monkeypatch, _timed_out(), BUSY_SERVE)
    f = r.failure  # type: ignore[attr-defined]
    assert f is not None and f.category is Category.SLOW_RESPONSE and f.transient
    assert "still working" in (f.detail or "")


async def test_5xx_from_a_live_engine_is_a_runtime_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = await _trial_where_checks_fail(
        tmp_path,
        monkeypatch,
        RequestError("POST /v1/completions answered 500: internal error", 500),
    )
    f = r.failure  # type: ignore[attr-defined]
    assert f is not None and f.category is Category.RUNTIME_CRASH and not f.transient


async def test_no_reference_answers_leaves_a_candidate_unchecked_not_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bringup.trial_checks as trial_mod
    from bringup.checks.correctness import CheckReport
    from bringup.plan.base import PlannedTrial
    from bringup.spec import parse_spec
    from bringup.trial import TrialContext, run_trial
    from bringup.verdict import Status

    class ServeAdapter(ScriptAdapter):
        def build_command(self, spec, flags, host, port):  # type: ignore[no-untyped-def]
            return [sys.executable, "-c", SERVE, str(port), "0"]

    async def correct(*a: object, **k: object) -> CheckReport:
        return CheckReport(True, None, [], [])

    monkeypatch.setattr(trial_mod, "run_correctness", correct)
    spec = parse_spec('[engine]\nname = "llama.cpp"\n[model]\npath = "m"\n')
    ctx = TrialContext(spec, ServeAdapter(), tmp_path, benchmark=False)  # no reference given
    run = await run_trial(ctx, PlannedTrial({}), "t")
    assert run.result.status is Status.UNCHECKED and run.result.failure is None
    assert "skipped" in run.result.checks["accuracy"]


def test_running_covers_the_group_not_only_the_leader(tmp_path: Path) -> None:
    """A leader that exited while its child lives still holds what the child holds."""
    code = (
        "import subprocess, sys; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])"
    )
    proc = EngineProcess([sys.executable, "-c", code], tmp_path / "e.log")
    try:
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() == 0
        assert proc.running()  # the sleeping child is in the group
    finally:
        proc.stop(1.0)
    deadline = time.monotonic() + 30  # the killed child is reaped by whoever adopted it
    while proc.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not proc.running()
