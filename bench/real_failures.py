"""Diagnosis on real vLLM failures whose cause is known because it was put there.

    python bench/real_failures.py [DIR] [--batch 1|2|3] [--json OUT.jsonl]

``scripts/gpu/vllm/failures.sh`` launched vLLM 0.26.0 on one H200 with one deliberate
fault per case and kept every whole log and exit status (``DIR``, by default
``docs/gpu/vllm-h200-failures``); ``scripts/gpu/vllm/failures.tsv`` holds each case's label,
written from the fault by the corpus conventions before any log existed. ``--batch 2`` reads
the second batch instead (``failures2.sh``, ``failures2.tsv``, by default
``docs/gpu/vllm-h200-failures2``): other faults, labelled and committed the same way;
``--batch 3`` the third (``failures3.sh``, ``failures3.tsv``, ``docs/gpu/vllm-h100-failures3``),
whose run folder also names its GPU and date (``GPU``, ``DATE``), which the case ids and
fields take. Unlike the corpus of public posts, nothing here was trimmed by a person: each
log is the whole output a user would hand to ``bringup diagnose``, start-up chatter,
warnings and all.

Prints one line per case (expected, got, confidence, the first evidence line) and, as its
last line, ``accuracy=<float> n=<int>``. The exit status is given where the process ended
by itself; the killed-engine-core case's server was stopped by the script, so its status
says nothing about the failure and is left out, as is the status of a start-up that the
script's time limit ended. ``--json`` writes the cases in the corpus
format, for use as regression fixtures once this figure has been reported.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bringup.diagnose import classify

ROOT = Path(__file__).resolve().parent.parent
GPU = ROOT / "scripts" / "gpu" / "vllm"
# batch: (the run's folder, the labels written before it)
BATCHES = {
    1: (ROOT / "docs" / "gpu" / "vllm-h200-failures", GPU / "failures.tsv"),
    2: (ROOT / "docs" / "gpu" / "vllm-h200-failures2", GPU / "failures2.tsv"),
    3: (ROOT / "docs" / "gpu" / "vllm-h100-failures3", GPU / "failures3.tsv"),
}
# the first two batches ran on one H200 on this day; later runs name theirs in the run folder
RUN_GPU, RUN_DATE = "H200", "2026-12-03"
# their exit status is the script's: a SIGTERM after the engine core was signalled, or
# timeout's 124 for a start-up that never ended
STOPPED_BY_SCRIPT = {
    "engine_core_killed",
    "engine_core_segv",
    "config_fifo_hang",
    "engine_core_stopped",
}
# faults that did not do what their label says, found by reading each log's last error line
# before any diagnosis of the batch was run; left out of the figure and named in its output:
# the named pipe in place of config.json was refused by vLLM's check of the model folder
# ("Invalid repository ID or local directory specified") before anything read it, so the
# start-up never blocked
NOT_AS_INTENDED = {"config_fifo_hang"}


def labels(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, category, _why = line.split("\t")
            out[name] = category
    return out


def run_fact(run_dir: Path, name: str, default: str) -> str:
    """One line the run wrote about itself (``GPU``, ``DATE``), or the default."""
    path = run_dir / name
    text = path.read_text().strip() if path.is_file() else ""
    return text or default


def cases(run_dir: Path, label_file: Path) -> list[dict[str, Any]]:
    out = []
    gpu = run_fact(run_dir, "GPU", RUN_GPU)
    date = run_fact(run_dir, "DATE", RUN_DATE)
    for name, category in sorted(labels(label_file).items()):
        if name in NOT_AS_INTENDED:
            continue
        rc = (run_dir / f"{name}.rc").read_text().strip()
        case: dict[str, Any] = {
            "id": f"vllm026-{gpu.lower()}-{name.replace('_', '-')}",
            "engine": "vllm",
            "category": category,
            "log": (run_dir / f"{name}.log").read_text(errors="replace"),
            "remedy": None,
            "source": f"scripts/gpu/vllm/{label_file.stem}.sh (vLLM 0.26.0, one deliberate fault)",
            "gpu": gpu,
            "date": date,
        }
        if rc.lstrip("-").isdigit() and name not in STOPPED_BY_SCRIPT:
            case["exit_code"] = int(rc)
        out.append(case)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", type=Path, help="the run's folder (default: the batch's)")
    ap.add_argument("--batch", type=int, choices=sorted(BATCHES), default=1)
    ap.add_argument("--json", type=Path, help="write the cases in the corpus format")
    args = ap.parse_args()
    run_dir, label_file = BATCHES[args.batch]
    found = cases(args.dir or run_dir, label_file)
    skipped = sorted(NOT_AS_INTENDED & set(labels(label_file)))
    if skipped:
        print(f"left out (the fault did not act as labelled): {', '.join(skipped)}")
    right = 0
    for c in found:
        d = classify(c["log"], engine=c["engine"], exit_code=c.get("exit_code"))
        ok = d.label == c["category"]
        right += ok
        why = (d.evidence[0] if d.evidence else "(no evidence)")[:110]
        print(
            f"{'ok  ' if ok else 'MISS'} {c['id']:44s} expected {c['category']:20s} "
            f"got {d.label:24s} conf {d.confidence:.2f}  {why}"
        )
    if args.json:
        args.json.write_text("".join(json.dumps(c) + "\n" for c in found))
    print(f"accuracy={right / len(found):.4f} n={len(found)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
