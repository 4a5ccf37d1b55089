"""A newcomer's path through the README, end to end on the real llama-server.

Each step runs a README command through the ``bringup`` CLI (a fresh process, as a user
would) against Gemma 3 270M and checks what the README promises of it:

1. ``sweep SPEC --json`` over two ``[[candidates]]`` sets (the f16 reference and a q8_0 K
   cache) with one excluded (``[plan] exclude``): one JSON line, a winner, the excluded
   set never launched.
2. ``launch SPEC --set <q4_0 K/V cache> --keep-failed --json``: the accuracy gate runs
   against the stored reference answers; the drifting server fails (exit 1 once stopped)
   and stays up for inspection.
3. ``probe URL --reference RUN``: against that server it exits 1 with the drift figure.
4. ``launch SPEC --json`` of the reference, then ``probe URL --reference RUN``: exit 0.
5. ``bench URL --json``: one JSON line on stdout, progress lines on stderr.
6. ``matrix``: cells with counts and the deciding rule.
7. ``deploy --to script --port P``: the script starts the winner for real and waits for a
   right answer; ``probe`` of the deployment then passes.
8. ``deploy --to systemd``: the unit passes ``systemd-analyze verify`` (where systemd is
   installed: it is the closest validator where no systemd runs), has no ``-lv 4`` and the
   port asked for.

Last line: ``steps=<int> passed=<int>``. Heavy (starts llama-server five times): run it
under the shared lock.

    flock /work/wt/heavy.lock .venv/bin/python bench/newcomer.py
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bringup.builtin_models import resolve_builtin

EXE = str(Path(sys.executable).parent / "bringup")
SPEC = """
[engine]
name = "llama.cpp"
[model]
path = "{model}"
[launch]
args = ["-c", "1024", "--no-warmup", "-t", "2"]
start_timeout_s = 120
stop_grace_s = 5
[reference]
"--flash-attn" = "off"
"--cache-type-k" = "f16"
"--cache-type-v" = "f16"
[[candidates]]
"--flash-attn" = "off"
"--cache-type-k" = "f16"
"--cache-type-v" = "f16"
[[candidates]]
"--flash-attn" = "on"
"--cache-type-k" = "q8_0"
"--cache-type-v" = "f16"
[[candidates]]
"--flash-attn" = "off"
"--cache-type-k" = "f16"
"--cache-type-v" = "q8_0"
[bench]
concurrency = [1]
input_tokens = 32
output_tokens = 16
requests = 2
warmup = 0
[checks]
accuracy_prompts = 6
accuracy_tokens = 16
long_context = false
[plan]
exclude = [{{"--flash-attn" = "off", "--cache-type-v" = "q8_0"}}]
"""
Q4 = ["--set", "--flash-attn=on", "--set", "--cache-type-k=q4_0", "--set", "--cache-type-v=q4_0"]


def bringup(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Launched:
    """``bringup launch --json`` kept running: its JSON line, stopped by Ctrl-C (SIGINT)."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [EXE, "launch", "spec.toml", "--json", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.up: dict[str, object] = json.loads(line) if line.startswith("{") else {}

    @property
    def run_id(self) -> str:
        return str(self.up.get("trial_id", "")).rsplit("-t", 1)[0]

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGINT)
        return self.proc.wait(timeout=60)


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="bringup-newcomer-"))
    (work / "spec.toml").write_text(SPEC.format(model=resolve_builtin("gemma3-270m")))
    results: list[tuple[str, bool, str]] = []
    state: dict[str, str] = {}

    def step(name: str, check: Callable[[], tuple[bool, str]]) -> None:
        t0 = time.monotonic()
        try:
            ok, detail = check()
        except Exception as exc:  # a step that raises failed; the next ones still run
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        results.append((name, ok, detail))
        print(f"{'PASS' if ok else 'FAIL'} {name} ({time.monotonic() - t0:.1f} s): {detail}")

    def sweep() -> tuple[bool, str]:
        out = bringup("sweep", "spec.toml", "--json", cwd=work)
        lines = out.stdout.splitlines()
        got = json.loads(lines[-1])
        state["run"] = got["run_id"]
        tried = [t["flags"] for t in got["trials"]]
        excluded = {"--flash-attn": "off", "--cache-type-k": "f16", "--cache-type-v": "q8_0"}
        ok = out.returncode == 0 and len(lines) == 1 and got["winner"] and excluded not in tried
        return bool(ok), f"exit {out.returncode}, {len(tried)} trials, winner {got['winner']}"

    def launch_drift() -> tuple[bool, str]:
        kept = Launched(work, *Q4, "--keep-failed")
        state["drift_url"] = str(kept.up.get("url", ""))
        state["drift_run"] = kept.run_id
        try:
            probe = bringup(
                "probe", state["drift_url"], "--reference", kept.run_id, "--prompts", "3", cwd=work
            )
        finally:
            code = kept.stop()
        failed = kept.up.get("category") == "accuracy_regression"
        state["drift_probe"] = f"{probe.returncode}|{probe.stdout.strip()}"
        return failed and code in (1, 130), f"{kept.up.get('status')} {kept.up.get('category')}"

    def probe_drift() -> tuple[bool, str]:
        code, _, verdict = state["drift_probe"].partition("|")
        return code == "1" and "drifts from the reference" in verdict, verdict[:160]

    def launch_reference() -> tuple[bool, str]:
        ref = Launched(work)
        try:
            probe = bringup("probe", str(ref.up.get("url")), "--reference", ref.run_id, cwd=work)
            bench = bringup("bench", str(ref.up.get("url")), "--requests", "2", "--json", cwd=work)
        finally:
            ref.stop()
        state["bench"] = f"{bench.returncode}|{len(bench.stdout.splitlines())}|{bench.stderr}"
        ok = ref.up.get("status") == "passed" and probe.returncode == 0
        return ok, probe.stdout.strip()[:160]

    def bench_json() -> tuple[bool, str]:
        code, n, err = state["bench"].split("|", 2)
        ok = code == "0" and n == "1" and "measuring" in err
        return ok, f"exit {code}, {n} stdout line(s), progress: {err.splitlines()[:1]}"

    def matrix() -> tuple[bool, str]:
        out = bringup("matrix", cwd=work)
        ok = out.returncode == 0 and "works" in out.stdout and "cells: works:" in out.stdout
        return ok, out.stdout.splitlines()[1] if len(out.stdout.splitlines()) > 1 else out.stdout

    def deploy_script() -> tuple[bool, str]:
        port = free_port()
        out = bringup(
            "deploy", state["run"], "--to", "script", "--out", "d", "--port", str(port), cwd=work
        )
        [script] = list((work / "d").glob("*.sh"))
        proc = subprocess.Popen(
            [str(script)],
            cwd=work,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(os.environ, BRINGUP=EXE),
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            line = ""  # the server's own log comes first on the same output
            for raw in proc.stdout:
                if "ready at" in raw or proc.poll() is not None:
                    line = raw.strip()
                    break
            probe = bringup("probe", f"http://127.0.0.1:{port}", cwd=work)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        ok = out.returncode == 0 and "ready at" in line and probe.returncode == 0
        return ok, f"{line}; probe: {probe.stdout.strip()[:100]}"

    def deploy_systemd() -> tuple[bool, str]:
        out = bringup(
            "deploy", state["run"], "--to", "systemd", "--out", "u", "--port", "8091", cwd=work
        )
        [unit] = list((work / "u").glob("*.service"))
        text = unit.read_text()
        shape = out.returncode == 0 and "-lv 4" not in text and "--port 8091" in text
        if shutil.which("systemd-analyze") is None:
            return shape, "systemd-analyze not installed: the unit's shape only"
        verify = subprocess.run(
            ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
        )
        return shape and verify.returncode == 0, verify.stderr.strip()[:160] or "verify: clean"

    step("sweep --json with [[candidates]] and exclude", sweep)
    step("launch: the gate fails a drifting cache, kept up", launch_drift)
    step("probe --reference fails the drifting server", probe_drift)
    step("launch the reference; probe --reference passes", launch_reference)
    step("bench --json: one line, progress on stderr", bench_json)
    step("matrix: counts and the rule", matrix)
    step("deploy --to script: started for real, its probe passes", deploy_script)
    step("deploy --to systemd: verified, no -lv 4, the port asked", deploy_systemd)
    shutil.rmtree(work, ignore_errors=True)
    passed = sum(1 for _, ok, _ in results if ok)
    print(f"steps={len(results)} passed={passed}")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
