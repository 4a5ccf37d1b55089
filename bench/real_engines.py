"""What the committed real-GPU runs hold, counted from their stored trials.

Reads every ``trials.json`` under ``docs/gpu/`` (``bringup report --json`` of a run made on
a lent GPU machine) and every profile summary under ``docs/gpu/**/profiles/*.json``
(``bringup profile --json``), and counts per engine: trials (every stored trial: passed,
failed or interrupted; pruned configurations never ran and are not trials) and passed ones.
Multi-GPU figures: a trial counts as multi-GPU when its parallelism flags ask for more than
one GPU *and* the run's host had that many (a TP=2 trial refused on a one-GPU host ran on
one); ``parallel_trials_max`` is the most trials of one run whose [started, updated] spans
overlap.

Last lines: ``vllm_trials=<int> vllm_passed=<int> vllm_profiles=<int> sglang_trials=<int>``
is printed last; ``multi_gpu_trials=<int> parallel_trials_max=<int>`` the line before.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "docs" / "gpu"
_PARALLEL = (
    "--tensor-parallel-size",
    "-tp",
    "--tp-size",
    "--tp",
    "--pipeline-parallel-size",
    "-pp",
    "--data-parallel-size",
    "-dp",
)


def gpus_asked(flags: dict[str, Any]) -> int:
    need = 1
    for name in _PARALLEL:
        value = flags.get(name)
        if value is not None and not isinstance(value, bool):
            try:
                need *= int(value)
            except ValueError:
                continue
    return need


def max_overlap(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    best = now = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="folder of committed GPU runs")
    args = ap.parse_args()
    trials: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    profiles: Counter[str] = Counter()
    multi = parallel = 0
    for path in sorted(args.root.rglob("trials.json")):
        data = json.loads(path.read_text())
        host_gpus = len((data.get("fingerprint") or {}).get("gpus") or [])
        spans = []
        for t in data.get("trials", []):
            engine = str(t.get("engine") or data["run"].get("engine"))
            trials[engine] += 1
            passed[engine] += t.get("status") == "passed"
            need = gpus_asked(t.get("flags") or {})
            multi += 1 < need <= host_gpus
            if t.get("started") and t.get("updated"):
                spans.append((float(t["started"]), float(t["updated"])))
        parallel = max(parallel, max_overlap(spans))
        rel = path.relative_to(args.root)
        print(f"{rel}: {len(data.get('trials', []))} trials, host GPUs {host_gpus}")
    for path in sorted(args.root.rglob("profiles/*.json")):
        profiles[str(json.loads(path.read_text()).get("engine", "unknown"))] += 1
    print(f"engines: {dict(trials)}; passed: {dict(passed)}; profiles: {dict(profiles)}")
    print(f"multi_gpu_trials={multi} parallel_trials_max={parallel}")
    print(
        f"vllm_trials={trials['vllm']} vllm_passed={passed['vllm']} "
        f"vllm_profiles={profiles['vllm']} sglang_trials={trials['sglang']}"
    )


if __name__ == "__main__":
    main()
