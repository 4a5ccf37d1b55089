"""Run the diagnosis classifier over the labelled failure corpus.

Prints per-category precision/recall, the confusion pairs (expected -> got) with the case
ids, and as its last line ``accuracy=<float> n=<int>``.

    .venv/bin/python bench/diagnose_eval.py [CORPUS.jsonl] [--verbose]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from bringup.diagnose import classify

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "failure_logs.jsonl"


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    paths = [a for a in argv if not a.startswith("--")]
    corpus = Path(paths[0]) if paths else DEFAULT
    if not corpus.exists():
        corpus = Path("/work/shared/corpus/failure_logs.jsonl")
    cases = [json.loads(line) for line in corpus.read_text().splitlines() if line.strip()]
    tp: Counter[str] = Counter()
    predicted: Counter[str] = Counter()
    actual: Counter[str] = Counter()
    confusion: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        d = classify(case["log"], engine=case.get("engine"), exit_code=case.get("exit_code"))
        want, got = case["category"], d.category.value
        actual[want] += 1
        predicted[got] += 1
        if want == got:
            tp[want] += 1
        else:
            confusion.setdefault((want, got), []).append(case.get("id", "?"))
        if verbose:
            mark = "ok " if want == got else "BAD"
            print(f"{mark} {case.get('id')}: want={want} got={got} conf={d.confidence:.2f}")
            for line in d.evidence[:2]:
                print(f"      | {line[:150]}")
            print(f"      remedy: {d.remedy}")
    print(f"{'category':28} {'prec':>6} {'recall':>6} {'n':>4}")
    for cat in sorted(set(actual) | set(predicted)):
        prec = tp[cat] / predicted[cat] if predicted[cat] else float("nan")
        rec = tp[cat] / actual[cat] if actual[cat] else float("nan")
        print(f"{cat:28} {prec:6.2f} {rec:6.2f} {actual[cat]:4d}")
    if confusion:
        print("confusion (expected -> got):")
        for (want, got), ids in sorted(confusion.items()):
            print(f"  {want} -> {got}: {len(ids)}  {', '.join(ids)}")
    n = len(cases)
    accuracy = sum(tp.values()) / n if n else 0.0
    print(f"accuracy={accuracy:.4f} n={n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
