"""Run the diagnosis classifier (the library call behind ``bringup diagnose``) over the
labelled failure corpus of bench/data/diagnose/.

    python bench/diagnose_eval.py
        [--split fit|fit2|heldout|heldout2|retired|heldout3|heldout4|heldout5|heldout6|heldout7
                 |heldout8|heldout9|heldout10|heldout11|heldout12|heldout13|all|legacy]
        [--verbose] [--rules-only | --compare]
    python bench/diagnose_eval.py CORPUS.jsonl [--verbose] [--rules-only | --compare]

Prints accuracy per engine, precision/recall per category, the confusion pairs
(expected -> got), accuracy by confidence band, accuracy by where the label was read (where the
cases record it: ``log`` when the excerpt shows the cause, ``thread`` when only the thread names
it, which no reader of the log alone can know), and as its last line
``accuracy=<float> n=<int>`` for the chosen split. A case is scored by the label
``bringup diagnose`` shows: ``unknown`` (no failure signal in the log) always counts wrong.
``legacy`` is the 43 public cases the rules were first written from (a subset of fit;
the old default run; ``all`` is fit plus heldout). ``heldout`` and ``heldout2`` are
retired held-out sets: measured several times while rules changed, they are read by rule
writers since 2026-12-01 (commit ``0187dcd``), so their ids print and ``--verbose`` works;
they stay separate files so their figures remain reportable, as fit figures. ``heldout3``,
measured five times while rules changed, is retired the same way since 2026-12-03 (commit
``cb027c2``). ``heldout4`` is the fourth held-out set, collected once ``heldout3`` had been
measured three times, ``heldout5`` the fifth, collected on 2026-12-03 once ``heldout4`` had
been measured, ``heldout6`` the sixth, collected later that day once ``heldout5`` had been
measured; all three were measured after rule changes and are retired since 2026-12-06, read by
rule writers like the first three. ``heldout7``, the seventh, collected on 2026-12-03 once
``heldout6`` had been measured after a rule change, was measured three times on 2026-12-06 and is
retired since, like the others. ``heldout8``, the eighth, collected on 2026-12-06 once
``heldout7`` was spent, was measured once on 2026-12-07 and retired the same day, and
``heldout9``, the ninth, collected on 2026-12-07 for the measurement after
heldout8's rule round, measured once on ``c8dfc64`` and retired that evening. ``heldout10``,
the tenth, collected on 2026-12-07 (evening), and ``heldout11``, the eleventh, sealed that
evening once heldout10 had been measured, were retired on 2026-12-08 once ``heldout12`` had
been sealed beside them, unread; ``retired`` holds all eleven. ``heldout12`` (measured once
per classifier on 2026-12-08) and ``heldout13``, sealed once heldout12 had been measured, are
held out: the fit figure is printed on the line before, and case ids and log lines are never printed
(``--verbose`` is refused): whoever writes rules reads the held-out figure, never its cases.

By default a case is diagnosed as ``bringup diagnose`` does: the rules, and the learned
fallback where no rule is sure (:mod:`bringup.diagnose.learned`). ``--rules-only`` scores the
rules alone; ``--compare`` scores both and prints, before the last line (which is the
rules+fallback figure), accuracy overall and on the cases the rules answer below 0.5, and how
many verdicts the model changed.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bringup.diagnose import classify

sys.path.insert(0, str(Path(__file__).resolve().parent))  # beside corpus_check, however loaded
from corpus_check import LABEL_FROM, RETIRED, SEALED

DATA = Path(__file__).resolve().parent / "data" / "diagnose"
SPLITS = ("fit", "fit2", *RETIRED, "retired", *SEALED, "all", "legacy")
HIDDEN = SEALED  # splits whose cases are never printed
BANDS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.85), (0.85, 1.01))


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def cases_of(split: str) -> list[dict[str, Any]]:
    if split == "all":
        return _load(DATA / "fit.jsonl") + _load(DATA / "heldout.jsonl")
    if split == "retired":
        return [c for name in RETIRED for c in _load(DATA / f"{name}.jsonl")]
    if split == "legacy":
        legacy = set((DATA / "legacy_fit_ids.txt").read_text().split())
        return [c for c in _load(DATA / "fit.jsonl") if c["id"] in legacy]
    return _load(DATA / f"{split}.jsonl")


def run(
    cases: list[dict[str, Any]], learned: bool = True
) -> list[tuple[dict[str, Any], str, float, list[str]]]:
    out = []
    for case in cases:
        d = classify(
            case["log"], engine=case.get("engine"), exit_code=case.get("exit_code"), learned=learned
        )
        out.append((case, d.label, d.confidence, d.evidence))
    return out


def accuracy(results: list[tuple[dict[str, Any], str, float, list[str]]]) -> float:
    return sum(c["category"] == got for c, got, _, _ in results) / len(results) if results else 0.0


def report(results: list[tuple[dict[str, Any], str, float, list[str]]], show_ids: bool) -> None:
    by_engine: dict[str, list[bool]] = {}
    for case, got, _, _ in results:
        by_engine.setdefault(case["engine"], []).append(case["category"] == got)
    print(f"{'engine':12} {'acc':>6} {'n':>4}")
    for engine, oks in sorted(by_engine.items()):
        print(f"{engine:12} {sum(oks) / len(oks):6.2f} {len(oks):4d}")
    tp: Counter[str] = Counter()
    predicted: Counter[str] = Counter()
    actual: Counter[str] = Counter()
    confusion: dict[tuple[str, str], list[str]] = {}
    for case, got, _, _ in results:
        want = case["category"]
        actual[want] += 1
        predicted[got] += 1
        if want == got:
            tp[want] += 1
        else:
            confusion.setdefault((want, got), []).append(case["id"])
    print(f"\n{'category':28} {'prec':>6} {'recall':>6} {'n':>4}")
    for cat in sorted(set(actual) | set(predicted)):
        prec = tp[cat] / predicted[cat] if predicted[cat] else float("nan")
        rec = tp[cat] / actual[cat] if actual[cat] else float("nan")
        print(f"{cat:28} {prec:6.2f} {rec:6.2f} {actual[cat]:4d}")
    if confusion:
        print("\nconfusion (expected -> got):")
        for (want, got), ids in sorted(confusion.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            print(f"  {want} -> {got}: {len(ids)}" + (f"  {', '.join(ids)}" if show_ids else ""))
    print(f"\n{'confidence':12} {'acc':>6} {'n':>4}")
    for lo, hi in BANDS:
        band = [c["category"] == got for c, got, conf, _ in results if lo <= conf < hi]
        label = f"[{lo:.2f},{min(hi, 1.0):.2f}{']' if hi > 1 else ')'}"
        acc = f"{sum(band) / len(band):6.2f}" if band else "     -"
        print(f"{label:12} {acc} {len(band):4d}")
    if any("label_from" in c for c, _, _, _ in results):
        print(f"\n{'label read from':16} {'acc':>6} {'n':>4}")
        for source in (*LABEL_FROM, None):
            oks = [
                c["category"] == got for c, got, _, _ in results if c.get("label_from") == source
            ]
            if oks:
                name = source or "not recorded"
                print(f"{name:16} {sum(oks) / len(oks):6.2f} {len(oks):4d}")


def compare(
    rules: list[tuple[dict[str, Any], str, float, list[str]]],
    combined: list[tuple[dict[str, Any], str, float, list[str]]],
) -> None:
    """Rules alone against rules+fallback on the same cases: overall, on the rules' guessing
    band (below 0.5, where the fallback may act), and how many verdicts changed."""
    tail = [i for i, (_, _, conf, _) in enumerate(rules) if conf < 0.5]
    changed = sum(r[1] != c[1] for r, c in zip(rules, combined, strict=True))
    print(f"\n{'':22} {'rules-only':>10} {'rules+fallback':>14} {'n':>4}")
    print(f"{'overall':22} {accuracy(rules):10.4f} {accuracy(combined):14.4f} {len(rules):4d}")
    print(
        f"{'rules below 0.5':22} {accuracy([rules[i] for i in tail]):10.4f} "
        f"{accuracy([combined[i] for i in tail]):14.4f} {len(tail):4d}"
    )
    print(f"verdicts changed by the fallback: {changed}")
    print(f"rules-only: accuracy={accuracy(rules):.4f} n={len(rules)}")


def _verbose(results: list[tuple[dict[str, Any], str, float, list[str]]]) -> None:
    for case, got, conf, evidence in results:
        want = case["category"]
        print(
            f"{'ok ' if want == got else 'BAD'} {case['id']}: want={want} got={got} conf={conf:.2f}"
        )
        for line in evidence[:2]:
            print(f"      | {line[:150]}")


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    rules_only = "--rules-only" in argv
    both = "--compare" in argv
    if rules_only and both:
        print("--rules-only and --compare exclude each other", file=sys.stderr)
        return 2
    args = [a for a in argv if a not in ("--verbose", "--rules-only", "--compare")]
    split, path = "fit", None
    if args[:1] == ["--split"]:
        if len(args) != 2 or args[1] not in SPLITS:
            print(f"--split takes one of {', '.join(SPLITS)}", file=sys.stderr)
            return 2
        split = args[1]
    elif len(args) == 1 and not args[0].startswith("-"):
        path = Path(args[0])
        if not path.is_file():
            print(f"{path} does not exist: give a corpus .jsonl file", file=sys.stderr)
            return 2
    elif args:
        print(
            f"usage: diagnose_eval.py [--split {'|'.join(SPLITS)}] [--verbose] "
            "[--rules-only | --compare] | CORPUS.jsonl",
            file=sys.stderr,
        )
        return 2
    # a sealed file given by its path is as sealed as its split
    hidden = split in HIDDEN or (path is not None and path.stem in HIDDEN)
    if hidden and verbose:
        print(
            f"--verbose would print held-out cases: it is refused for --split {split}"
            if path is None
            else f"--verbose would print held-out cases: it is refused for {path.name}",
            file=sys.stderr,
        )
        return 2
    cases = _load(path) if path else cases_of(split)
    if not cases:
        where = path if path is not None else f"--split {split}"
        print(f"{where} holds no case yet: add cases (bench/corpus_add.py) first", file=sys.stderr)
        return 2
    results = run(cases, learned=not rules_only)
    if verbose:
        _verbose(results)
    report(results, show_ids=not hidden)
    if both:
        compare(run(cases, learned=False), results)
    if split in HIDDEN and path is None:
        fit = run(cases_of("fit"), learned=not rules_only)
        print(f"\nfit: accuracy={accuracy(fit):.4f} n={len(fit)}")
    print(f"accuracy={accuracy(results):.4f} n={len(results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
