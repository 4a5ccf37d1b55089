"""The simulated engine as a process: health semantics, API, crashes, flag rejection."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from bringup.testing.hogs import Slack

WORLD = """
[world]
name = "tiny"
engine = "{engine}"
model = "sim/tiny"
[timing]
startup_s = {startup}
listen_s = {listen}
[space]
"--backend" = ["good", "bad", "junk", "drifty"]
[reference]
"--backend" = "good"
[flags]
known = ["--known"]
[performance]
output_tok_s = 2000.0
ttft_p50_ms = 5.0
[[outcome]]
when = {{ "--backend" = "bad" }}
kind = "crash"
exit_code = 3
after_s = 0.3
log = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
[[outcome]]
when = {{ "--backend" = "junk" }}
kind = "garbage"
[[outcome]]
when = {{ "--backend" = "drifty" }}
kind = "drift"
logprob_drift = 0.2
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def world_file(
    tmp_path: Path, engine: str = "sglang", startup: float = 1.0, listen: float = 0.4
) -> Path:
    path = tmp_path / f"{engine}.toml"
    path.write_text(WORLD.format(engine=engine, startup=startup, listen=listen))
    return path


def start(
    world: Path, port: int, *flags: str, model: tuple[str, ...] = ("--model-path", "m")
) -> subprocess.Popen[str]:
    argv = [
        sys.executable,
        "-m",
        "bringup.testing.simengine",
        "--world",
        str(world),
        "--port",
        str(port),
        *model,
        *flags,
    ]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=10)


async def poll(url: str, until_s: float = 15.0, stop_at: int = 200) -> list[int | str]:
    """Health states seen until ``stop_at``: 'refused' or the status code."""
    seen: list[int | str] = []
    deadline = time.monotonic() + until_s
    async with aiohttp.ClientSession() as s:
        while time.monotonic() < deadline:
            try:
                async with s.get(url) as r:
                    state: int | str = r.status
            except aiohttp.ClientConnectionError:
                state = "refused"
            if not seen or seen[-1] != state:
                seen.append(state)
            if state == stop_at:
                break
            await asyncio.sleep(0.05)
    return seen


async def test_sglang_refused_then_503_then_200_and_serves(
    tmp_path: Path, procs: list[subprocess.Popen[str]], slack: Slack
) -> None:
    port = free_port()
    # the phases count from launch, and the simulated engine's own imports come first: on
    # a loaded machine they can outlast a fixed 1 s start-up, leaving no 503 phase to see.
    # Both times are measured in interpreter start-ups, so the phase stays wide under load.
    listen, ready = slack(30), slack(150)
    world = world_file(tmp_path, startup=ready, listen=listen)
    procs.append(start(world, port, "--backend", "good"))
    base = f"http://127.0.0.1:{port}"
    assert await poll(f"{base}/health", until_s=ready + 15) == ["refused", 503, 200]
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}/v1/models") as r:
            assert (await r.json())["data"][0]["id"] == "m"
        body = {"prompt": "The capital of France is", "max_tokens": 3, "logprobs": 1}
        async with s.post(f"{base}/v1/completions", json=body) as r:
            out = await r.json()
        assert out["choices"][0]["text"].startswith(" Paris")
        assert len(out["choices"][0]["logprobs"]["token_logprobs"]) == 3
        body = {
            "prompt": "hi",
            "max_tokens": 4,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        async with s.post(f"{base}/v1/completions", json=body) as r:
            raw = (await r.read()).decode()
    events = [ln[6:] for ln in raw.splitlines() if ln.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert sum(1 for c in chunks if c["choices"]) == 4
    assert chunks[-1]["usage"]["completion_tokens"] == 4


async def test_vllm_refused_until_ready(tmp_path: Path, procs: list[subprocess.Popen[str]]) -> None:
    port = free_port()
    procs.append(
        start(world_file(tmp_path, "vllm"), port, "--backend", "good", model=("serve", "m"))
    )
    assert await poll(f"http://127.0.0.1:{port}/health") == ["refused", 200]


async def test_llamacpp_loading_body(
    tmp_path: Path, procs: list[subprocess.Popen[str]], slack: Slack
) -> None:
    port = free_port()
    # llama-server listens at once and loads until ready; the loading phase counts from
    # launch, after the simulated engine's own imports, so its length is measured in
    # interpreter start-ups (a fixed 2.5 s can pass before the port even opens under load)
    ready = slack(150)
    procs.append(
        start(
            world_file(tmp_path, "llama.cpp", startup=ready),
            port,
            "--backend",
            "good",
            model=("-m", "m.gguf"),
        )
    )
    url = f"http://127.0.0.1:{port}/health"
    seen = await poll(url, until_s=ready + 15, stop_at=503)
    assert seen[-1] == 503 and 200 not in seen
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        assert r.status == 503 and (await r.json())["error"]["message"] == "Loading model"
    assert (await poll(url, until_s=ready + 15))[-1] == 200


def test_crash_prints_the_log_and_exits_with_its_code(tmp_path: Path) -> None:
    p = start(world_file(tmp_path), free_port(), "--backend", "bad")
    out, _ = p.communicate(timeout=20)
    assert p.returncode == 3
    assert "no kernel image is available" in out


@pytest.mark.parametrize("flag", ["--unknown-thing", "--mamba-scheduler-strategy"])
def test_unknown_flags_are_rejected(tmp_path: Path, flag: str) -> None:
    p = start(world_file(tmp_path), free_port(), flag, "x")
    out, _ = p.communicate(timeout=20)
    assert p.returncode == 2
    assert f"unrecognized arguments: {flag}" in out


async def test_garbage_and_drift(tmp_path: Path, procs: list[subprocess.Popen[str]]) -> None:
    ports = {b: free_port() for b in ("good", "junk", "drifty")}
    for backend, port in ports.items():
        procs.append(start(world_file(tmp_path), port, "--backend", backend, "--known"))
    outs = {}
    for backend, port in ports.items():
        assert (await poll(f"http://127.0.0.1:{port}/health"))[-1] == 200
        async with aiohttp.ClientSession() as s:
            body = {"prompt": "Tell me about serving", "max_tokens": 8, "logprobs": 1}
            async with s.post(f"http://127.0.0.1:{port}/v1/completions", json=body) as r:
                outs[backend] = (await r.json())["choices"][0]
    assert outs["junk"]["text"] == "!" * 8
    good = outs["good"]["logprobs"]["token_logprobs"]
    drifted = outs["drifty"]["logprobs"]["token_logprobs"]
    mad = sum(abs(a - b) for a, b in zip(good, drifted, strict=True)) / len(good)
    assert mad == pytest.approx(0.2, abs=1e-3)


LOAD_WORLD = """
[world]
name = "load"
[timing]
startup_s = 0.3
listen_s = 0.1
[space]
"--backend" = ["good", "oom", "junk"]
[performance]
output_tok_s = 2000.0
ttft_p50_ms = 50.0
[[outcome]]
when = { "--backend" = "oom" }
kind = "crash"
min_concurrency = 3
exit_code = 7
log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
[[outcome]]
when = { "--backend" = "junk" }
kind = "garbage"
min_concurrency = 3
"""


async def _ask(port: int, n: int) -> list[str | int]:
    """``n`` requests at once: each one's text, or its HTTP status / 'dropped'."""

    async def one(s: aiohttp.ClientSession) -> str | int:
        body = {"prompt": "Tell me about serving", "max_tokens": 8}
        try:
            async with s.post(f"http://127.0.0.1:{port}/v1/completions", json=body) as r:
                return str((await r.json())["choices"][0]["text"]) if r.status == 200 else r.status
        except aiohttp.ClientError:
            return "dropped"

    async with aiohttp.ClientSession() as s:
        return list(await asyncio.gather(*(one(s) for _ in range(n))))


async def test_load_rules_hold_only_with_that_many_requests_in_flight(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    world = tmp_path / "load.toml"
    world.write_text(LOAD_WORLD)
    ports = {b: free_port() for b in ("junk", "oom")}
    for backend, port in ports.items():
        procs.append(start(world, port, "--backend", backend))
    for port in ports.values():
        assert (await poll(f"http://127.0.0.1:{port}/health"))[-1] == 200
    # one, then two at a time: below the rules' three streams, both answer like a healthy model
    for port in ports.values():
        for n in (1, 2):
            assert all(isinstance(a, str) and "!" not in a for a in await _ask(port, n))
    junk = await _ask(ports["junk"], 4)
    assert sum(a == "!" * 8 for a in junk) >= 2, junk  # the third and fourth in flight
    oom = procs[1]
    got = await _ask(ports["oom"], 4)
    assert "dropped" in got, got
    out, _ = oom.communicate(timeout=20)
    assert oom.returncode == 7
    assert "CUDA out of memory" in out
