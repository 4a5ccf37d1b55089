"""One trial's life on the real llama-server."""

from __future__ import annotations

import asyncio
import http.server
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from bringup.engines.llamacpp import LlamaCppAdapter
from bringup.errors import PortBusyError
from bringup.plan.base import PlannedTrial
from bringup.server.ports import free_port
from bringup.spec import Spec
from bringup.store import Store
from bringup.sweep import SweepOptions, prepare, run_sweep
from bringup.testing.hogs import Slack
from bringup.trial import INTERRUPT_GRACE_S, TrialContext, run_trial
from bringup.verdict import Category, Stage, Status, TrialResult

pytestmark = pytest.mark.integration


def _ctx(spec: Spec, tmp_path: Path, **kw: object) -> TrialContext:
    return TrialContext(spec, LlamaCppAdapter(), tmp_path, **kw)  # type: ignore[arg-type]


async def test_healthy_trial_passes_and_leaves_nothing(spec: Spec, tmp_path: Path) -> None:
    run = await run_trial(_ctx(spec, tmp_path), PlannedTrial({"--flash-attn": "on"}), "t-ok")
    r = run.result
    assert r.status is Status.PASSED, r.failure
    assert r.stage is Stage.PASSED
    assert (r.pid is not None and not psutil.pid_exists(r.pid)) or psutil.Process(
        r.pid
    ).status() == psutil.STATUS_ZOMBIE
    assert r.metrics["decode_tok_s_single"] > 0
    assert r.metrics["ttft_p50_ms"] > 0
    assert r.chosen, "what llama-server chose (flash attention, KV types) is read from its log"
    log = Path(r.log_path or "").read_text()
    assert "--flash-attn" in " ".join(r.command) and "model loaded" in log


async def test_refused_combination_fails_fast_with_evidence(
    spec: Spec, tmp_path: Path, slack: Slack
) -> None:
    t0 = time.monotonic()
    run = await run_trial(
        _ctx(spec, tmp_path),
        PlannedTrial({"--flash-attn": "off", "--cache-type-v": "q8_0"}),
        "t-bad",
    )
    r = run.result
    assert r.status is Status.FAILED and r.failure is not None
    assert r.failure.category is Category.INVALID_CONFIG
    assert any("flash_attn" in e for e in r.failure.evidence)
    assert r.failure.stage in (Stage.READY, Stage.LAUNCHING)
    assert time.monotonic() - t0 < 30 + slack(100)


async def test_process_killed_during_readiness(spec: Spec, tmp_path: Path, slack: Slack) -> None:
    """The engine crashes while it loads (SIGSEGV, its own kind of death; a SIGKILL from
    outside would make the trial interrupted): the verdict comes within a second of the
    death on a quiet machine, plus measured steps on a busy one."""
    seen: dict[str, float] = {}

    def on_stage(result: TrialResult, stage: Stage, message: str) -> None:
        if stage is Stage.READY and result.pid and "killer" not in seen:
            seen["killer"] = 1.0

            def kill() -> None:
                time.sleep(0.05)
                # the engine this test's trial started
                psutil.Process(result.pid).send_signal(signal.SIGSEGV)
                seen["killed_at"] = time.monotonic()

            threading.Thread(target=kill).start()
        if result.status is Status.FAILED and "verdict_at" not in seen:
            seen["verdict_at"] = time.monotonic()

    run = await run_trial(_ctx(spec, tmp_path, on_stage=on_stage), PlannedTrial({}), "t-kill")
    r = run.result
    assert r.status is Status.FAILED and r.failure is not None
    assert r.failure.stage is Stage.READY
    assert "SIGSEGV" in (r.failure.detail or "")
    assert seen["verdict_at"] - seen["killed_at"] < 1.0 + slack(25)


@pytest.fixture
def squatter() -> Iterator[int]:
    """Somebody else's HTTP server answering 200 on /health."""

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"status":"ok","who":"squatter"}')

        def log_message(self, *a: object) -> None:
            pass

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield port
    server.shutdown()


async def test_pinned_port_held_by_another_server(
    gemma_path: str, spec_factory: Callable[..., Spec], squatter: int, tmp_path: Path
) -> None:
    spec = spec_factory(gemma_path, extra='[plan]\nplanner = "grid"\n').model_copy()
    spec.launch.port = squatter
    store = Store(tmp_path / "b.db")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(PortBusyError) as err:
        await run_sweep(prepare(spec), store, SweepOptions(runs_dir=str(tmp_path / "runs")))
    msg = str(err.value)
    assert f"127.0.0.1:{squatter}" in msg and "squatter" in msg and "nothing was launched" in msg
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    assert after <= before, "no engine was started"
    trials = store.trials()
    assert trials[-1].category == "port_in_use" and trials[-1].pid is None
    # the squatter still answers: bringup never touched it
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{squatter}/health", timeout=5) as resp:
        assert resp.status == 200


async def test_interrupt_leaves_no_engine_and_marks_trial(
    gemma_path: str, spec_factory: Callable[..., Spec], tmp_path: Path, slack: Slack
) -> None:
    # a benchmark of 100000 requests: the trial is still running when it is cancelled
    spec = spec_factory(gemma_path, requests=100_000)
    store = Store(tmp_path / "b.db")
    prep = prepare(spec)
    task = asyncio.create_task(run_sweep(prep, store, SweepOptions(runs_dir=str(tmp_path / "r"))))
    pid = None
    while pid is None and not task.done():
        await asyncio.sleep(0.05)
        rows = store.trials()
        if rows and rows[-1].pid and rows[-1].stage == "benchmarked":
            pid = rows[-1].pid
    assert pid is not None, "the sweep ended before a trial reached its benchmark"
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - t0 < INTERRUPT_GRACE_S + 2 + slack(25)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert store.trials()[-1].status == "interrupted"
