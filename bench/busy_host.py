"""Verdicts that hold on a busy machine: the same bounded sweep, quiet and beside CPU hogs.

Runs a bounded part of the bundled demo spec (``bringup/data/demo.toml``: its model, launch
arguments, checks and objective; the space cut to ``--flash-attn`` x ``--cache-type-k`` x
``--cache-type-v`` over two values each with ``--parallel 1 --threads 2``, the grid
planner so both runs try the same configurations, a smaller benchmark) twice through the
``bringup sweep`` CLI: once with nothing of ours beside it ("quiet": the machine is shared,
so the contention each trial measured is printed), once beside ``--hogs`` busy-loop
processes (:mod:`bringup.testing.hogs`; siblings of bringup, so bringup counts them as
other processes' CPU).

Per configuration the verdict is its last trial's status and category (``passed``,
``unchecked``, ``failed:<category>``), or ``pruned`` / ``not run``. The figures:

- ``verdict_agreement``: the share of configurations whose verdict is the same in both runs;
- ``transient_prunes``: configurations pruned, in either run, by a trial whose failure was
  transient (slow_response, stalled, or marked transient) - it must be 0;
- ``hogs``: hogs still alive when the busy sweep ended.

Nothing in bringup was tuned on these runs (the contention share, progress and timeout
constants were set from their definitions before the first run), so there is no held-out
part to report separately.

Last line: ``verdict_agreement=<float> transient_prunes=<int> hogs=<int>``.

    flock /work/wt/heavy.lock .venv/bin/python bench/busy_host.py [--hogs 2] [--timeout 280]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bringup.contention import benchmark_contention
from bringup.store import Store
from bringup.testing.hogs import cpu_hogs

SPEC = """
name = "busy-host bound of the demo"
[engine]
name = "llama.cpp"
[model]
builtin = "gemma3-270m"
[launch]
args = ["-c", "2048", "--no-warmup", "--parallel", "1", "--threads", "2"]
start_timeout_s = 120
hang_timeout_s = 60
stop_grace_s = 5
[space]
"--flash-attn" = ["on", "off"]
"--cache-type-k" = ["f16", "q4_0"]
"--cache-type-v" = ["f16", "q8_0"]
[reference]
"--flash-attn" = "off"
"--cache-type-k" = "f16"
"--cache-type-v" = "f16"
[bench]
concurrency = [1]
input_tokens = 48
output_tokens = 24
requests = 3
warmup = 1
[objective]
maximize = "output_tok_s"
require = ["ttft_p99_ms < 5000"]
[checks]
accuracy_prompts = 6
accuracy_tokens = 12
[plan]
planner = "grid"
"""


def _sweep(workdir: Path, timeout_s: float) -> tuple[int, float]:
    """One ``bringup sweep`` of the bounded spec; (exit status, wall seconds)."""
    exe = Path(sys.executable).parent / "bringup"
    t0 = time.monotonic()
    with (workdir / "out.txt").open("w") as out:
        proc = subprocess.Popen(
            [str(exe), "sweep", "spec.toml", "--db", "b.db", "--runs-dir", "runs"],
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "80"},
        )
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # the sweep this script started: stops its engine
            rc = proc.wait(timeout=60)
    return rc, time.monotonic() - t0


def _verdicts(db: Path) -> tuple[dict[str, str], int, list[float]]:
    """Per configuration its verdict; transient prunes; each benchmark's taken CPU share."""
    store = Store(db)
    run = store.run()
    assert run is not None
    rows = store.trials(run["id"])
    out: dict[str, str] = {}
    transient_ids: set[str] = set()
    taken: list[float] = []
    for r in rows:  # in order: a retry's verdict replaces its transient first look
        key = " ".join(f"{k}={v}" for k, v in sorted(r.flags.items()))
        out[key] = r.status.value + (f":{r.category.value}" if r.category else "")
        if r.transient or (r.category and r.category.value in ("slow_response", "stalled")):
            transient_ids.add(r.id)
        c = benchmark_contention(r.contention)
        if c is not None and "benchmark" in r.contention:
            taken.append(c.taken_share)
    with sqlite3.connect(db) as con:
        pruned = con.execute(
            "SELECT flags_json, by_trial FROM pruned WHERE run_id=?", (run["id"],)
        ).fetchall()
    for flags_json, _ in pruned:
        flags = json.loads(flags_json)
        out.setdefault(" ".join(f"{k}={v}" for k, v in sorted(flags.items())), "pruned")
    transient_prunes = sum(1 for _, by in pruned if by in transient_ids)
    return out, transient_prunes, taken


def _describe(name: str, rc: int, wall: float, verdicts: dict[str, str], taken: list[float]) -> str:
    share = (
        f"others+steal took {statistics.mean(taken):.0%} mean, {max(taken):.0%} max of the "
        f"CPU over {len(taken)} benchmarks"
        if taken
        else "no benchmark ran"
    )
    return f"{name}: exit {rc}, {wall:.0f} s, {len(verdicts)} configurations; {share}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=280.0, help="seconds per sweep")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="busy-host-"))
    runs: dict[str, tuple[dict[str, str], int]] = {}
    alive = 0
    for name in ("quiet", "busy"):
        work = root / name
        work.mkdir()
        (work / "spec.toml").write_text(SPEC)
        if name == "busy":
            with cpu_hogs(args.hogs) as hogs:
                rc, wall = _sweep(work, args.timeout)
                alive = hogs.alive()
        else:
            rc, wall = _sweep(work, args.timeout)
        verdicts, transient_prunes, taken = _verdicts(work / "b.db")
        runs[name] = (verdicts, transient_prunes)
        print(_describe(name, rc, wall, verdicts, taken))
        for key, verdict in sorted(verdicts.items()):
            print(f"  {verdict:<36} {key}")
        tail = (work / "out.txt").read_text(errors="replace").splitlines()
        said = ("verdicts:", "winner", "no winner", "note:", "warning:", "the reference")
        print("\n".join(f"  | {line}" for line in tail if line.startswith(said)))
    quiet, busy = runs["quiet"][0], runs["busy"][0]
    keys = sorted(set(quiet) | set(busy))
    same = sum(1 for k in keys if quiet.get(k, "not run") == busy.get(k, "not run"))
    for k in keys:
        if quiet.get(k, "not run") != busy.get(k, "not run"):
            print(f"disagree: {k}: quiet {quiet.get(k, 'not run')}, busy {busy.get(k, 'not run')}")
    agreement = same / len(keys) if keys else 0.0
    prunes = runs["quiet"][1] + runs["busy"][1]
    print(f"verdict_agreement={agreement:.3f} transient_prunes={prunes} hogs={alive}")


if __name__ == "__main__":
    main()
