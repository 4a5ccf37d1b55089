"""How fast does bringup reach a verdict, and what does it cost per trial?

1. crash_to_verdict_s: a real llama-server is SIGKILLed while bringup waits for it to be
   ready (the planted crash); we time from the kill to the moment the trial is recorded as
   failed. Repeated, the worst case is reported. Target: under 1 s.
2. overhead_s: one healthy trial on the real llama-server, its wall time minus what the
   engine and the work itself took (ready, checks, benchmark): flag checks, port choice,
   spawn, identity, store writes and teardown.

Last line: ``crash_to_verdict_s=<float> overhead_s=<float>``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import threading
import time
from pathlib import Path

import psutil

from bringup.builtin_models import resolve_builtin
from bringup.engines.llamacpp import LlamaCppAdapter
from bringup.plan.base import PlannedTrial
from bringup.spec import parse_spec
from bringup.store import Store
from bringup.trial import TrialContext, run_trial
from bringup.verdict import Stage, Status, TrialResult

SPEC = """
[engine]
name = "llama.cpp"
[model]
path = "{model}"
[launch]
args = ["-c", "1024", "--no-warmup", "-t", "2"]
stop_grace_s = 5
[bench]
concurrency = [1]
input_tokens = 32
output_tokens = 16
requests = 2
warmup = 0
[checks]
accuracy = false
"""


async def crash_once(spec_text: str, workdir: Path, i: int) -> float:
    spec = parse_spec(spec_text)
    marks: dict[str, float] = {}

    def on_stage(result: TrialResult, stage: Stage, message: str) -> None:
        if stage is Stage.READY and result.pid and "armed" not in marks:
            marks["armed"] = 1.0
            pid = result.pid

            def kill() -> None:
                time.sleep(0.1)
                proc = psutil.Process(pid)
                marks["killed"] = time.monotonic()
                proc.kill()

            threading.Thread(target=kill).start()
        if result.status is Status.FAILED and "verdict" not in marks:
            marks["verdict"] = time.monotonic()

    ctx = TrialContext(spec, LlamaCppAdapter(), workdir, on_stage=on_stage)
    run = await run_trial(ctx, PlannedTrial({}), f"crash-{i}")
    assert run.result.status is Status.FAILED, run.result
    return marks["verdict"] - marks["killed"]


async def overhead(spec_text: str, workdir: Path) -> tuple[float, dict[str, float]]:
    spec = parse_spec(spec_text)
    store = Store(workdir / "b.db")
    run_id = store.create_run(
        spec_path=None,
        spec_digest="x",
        spec_json="{}",
        engine="llama.cpp",
        fingerprint={},
        fingerprint_key="fp",
        run_dir=str(workdir),
    )

    def on_stage(result: TrialResult, stage: Stage, message: str) -> None:
        store.save_trial(
            run_id,
            1,
            result,
            cfg_key="k",
            fingerprint_key="fp",
            engine="llama.cpp",
            engine_version="?",
        )

    ctx = TrialContext(spec, LlamaCppAdapter(), workdir, on_stage=on_stage)
    t0 = time.monotonic()
    run = await run_trial(ctx, PlannedTrial({}), "healthy")
    total = time.monotonic() - t0
    assert run.result.status is Status.PASSED, run.result.failure
    t = run.result.timings
    work = sum(t.get(k, 0.0) for k in ("ready_s", "correct_s", "accurate_s", "benchmarked_s"))
    return total - work, {"total_s": total, **t}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    model = resolve_builtin("gemma3-270m")
    text = SPEC.format(model=model)
    with tempfile.TemporaryDirectory() as d:
        crashes = [asyncio.run(crash_once(text, Path(d), i)) for i in range(args.repeats)]
        for i, c in enumerate(crashes):
            print(f"crash {i}: verdict {c * 1000:.0f} ms after SIGKILL")
        over, timings = asyncio.run(overhead(text, Path(d)))
        print("healthy trial timings: " + ", ".join(f"{k}={v:.3f}" for k, v in timings.items()))
    print(f"crash_to_verdict_s={max(crashes):.3f} overhead_s={over:.3f}")


if __name__ == "__main__":
    main()
