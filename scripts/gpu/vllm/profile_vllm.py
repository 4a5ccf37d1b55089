"""Torch-profiler traces of running vLLM servers, taken through /start_profile and /stop_profile.

Each configuration gets its own ``vllm serve`` launched with ``--profiler-config`` (torch
profiler, an absolute trace folder, no Python stacks, at most ``--steps`` engine steps, the
API front end left out so only the engine's steps are traced). All servers start together
(start-up is mostly CPU) and share the GPU's memory; they are then profiled one at a time,
each under the same closed-loop decode load, so no other server competes for the GPU while
its steps are traced. Standard library only: it runs under the device's python3.

Usage: python3 profile_vllm.py OUT_DIR MODEL_DIR NAME='FLAGS' [NAME='FLAGS' ...]
Writes OUT_DIR/NAME/ (the traces vLLM wrote), OUT_DIR/NAME.log (the server's log) and
OUT_DIR/profile.json (per configuration: flags, load, wall times of the profiled window).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

CONCURRENCY = int(os.environ.get("PROFILE_CONCURRENCY", "32"))
STEPS = int(os.environ.get("PROFILE_STEPS", "40"))
MEM = os.environ.get("PROFILE_GPU_MEM", "0.2")
BASE_PORT = 18100


def http(url: str, body: dict | None = None, timeout: float = 120.0) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def launch(out: Path, model: str, name: str, flags: str, port: int) -> subprocess.Popen[bytes]:
    trace_dir = (out / name).resolve()
    trace_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "profiler": "torch",
        "torch_profiler_dir": str(trace_dir),
        "torch_profiler_with_stack": False,
        "ignore_frontend": True,
        "max_iterations": STEPS,
    }
    argv = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", model,
            "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "m",
            "--max-model-len", "2048", "--gpu-memory-utilization", MEM,
            *shlex.split(flags), "--profiler-config", json.dumps(config)]
    log = open(out / f"{name}.log", "wb")
    log.write((" ".join(shlex.quote(a) for a in argv) + "\n").encode())
    log.flush()
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def load(port: int, stop: threading.Event, done: list[int]) -> None:
    body = {"model": "m", "prompt": "Write a long story about a lighthouse keeper.",
            "max_tokens": 256, "temperature": 0, "ignore_eos": True}
    while not stop.is_set():
        status, _ = http(f"http://127.0.0.1:{port}/v1/completions", body)
        if status == 200:
            done.append(1)


def profile_one(out: Path, name: str, port: int) -> dict:
    base = f"http://127.0.0.1:{port}"
    for _ in range(4):  # warm-up
        http(f"{base}/v1/completions", {"model": "m", "prompt": "Hi", "max_tokens": 16})
    stop, done = threading.Event(), []
    workers = [threading.Thread(target=load, args=(port, stop, done)) for _ in range(CONCURRENCY)]
    for w in workers:
        w.start()
    time.sleep(3.0)  # every stream past its prefill: the traced steps are decode steps
    t0 = time.monotonic()
    started = http(f"{base}/start_profile", {})[0]
    time.sleep(2.0)
    stopped = http(f"{base}/stop_profile", {}, timeout=300)[0]
    window = time.monotonic() - t0
    stop.set()
    for w in workers:
        w.join()
    deadline = time.monotonic() + 120
    traces: list[str] = []
    while time.monotonic() < deadline:  # the worker writes its trace after the stop returns
        traces = sorted(str(p.name) for p in (out / name).glob("*.pt.trace.json.gz"))
        if traces and all(_stable(out / name / t) for t in traces):
            break
        time.sleep(2)
    return {"start_status": started, "stop_status": stopped, "window_s": round(window, 2),
            "concurrency": CONCURRENCY, "max_iterations": STEPS, "completed": len(done),
            "traces": traces}


def _stable(path: Path) -> bool:
    size = path.stat().st_size
    time.sleep(1.0)
    return size > 0 and path.stat().st_size == size


def main(out_dir: str, model: str, *configs: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    named = [c.split("=", 1) for c in configs]
    procs = {name: (launch(out, model, name, flags, BASE_PORT + i), BASE_PORT + i, flags)
             for i, (name, flags) in enumerate(named)}
    result: dict[str, dict] = {}
    t0 = time.monotonic()
    for name, (proc, port, flags) in procs.items():
        while proc.poll() is None and http(f"http://127.0.0.1:{port}/health", timeout=5)[0] != 200:
            if time.monotonic() - t0 > 480:
                break
            time.sleep(2)
        ready = proc.poll() is None and http(f"http://127.0.0.1:{port}/health")[0] == 200
        print(f"{name}: ready={ready} after {time.monotonic() - t0:.0f} s", flush=True)
        result[name] = {"flags": flags, "ready": ready}
    for name, (proc, port, _) in procs.items():
        if result[name]["ready"]:
            result[name] |= profile_one(out, name, port)
            print(f"{name}: {result[name]}", flush=True)
    for proc, _, _ in procs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
    for proc, _, _ in procs.values():
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
    (out / "profile.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(r.get("traces") for r in result.values()) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
