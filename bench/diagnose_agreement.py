"""How often a second reader, given only a log, gives the label the corpus gives it.

    python bench/diagnose_agreement.py [READER.tsv [SPLIT]]

``READER.tsv`` (default ``bench/data/diagnose/agreement/heldout7_second_reader.tsv``) holds one
line per case, ``id<TAB>category<TAB>certainty<TAB>reason``, written by someone who saw each
case's log, engine, GPU and exit status and nothing else: not the corpus label, not the
thread the log came from, not the classifier. ``SPLIT`` (default ``heldout7``, a retired set)
is the corpus file the ids come from.

The figure bounds what any classifier reading the log alone can be expected to reach on that
set: where two careful readers disagree, the label rests on the thread, not on the log.
Prints agreement by the reader's certainty, the classifier's accuracy on all cases and on the
cases both readers agree on, and as its last line ``agreement=<float> n=<int>``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from bringup.diagnose import classify

DATA = Path(__file__).resolve().parent / "data" / "diagnose"
DEFAULT_READER = DATA / "agreement" / "heldout7_second_reader.tsv"


def read_labels(path: Path) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for line in path.read_text().splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) >= 3:
            out[parts[0]] = (parts[1], parts[2])
    return out


def main(argv: list[str]) -> int:
    reader = Path(argv[0]) if argv else DEFAULT_READER
    split = argv[1] if len(argv) > 1 else "heldout7"
    corpus_file = DATA / f"{split}.jsonl"
    if not reader.is_file() or not corpus_file.is_file():
        print(f"need an existing reader file and split: {reader}, {corpus_file}", file=sys.stderr)
        return 2
    cases = {
        c["id"]: c for c in map(json.loads, corpus_file.read_text().splitlines()) if c.get("id")
    }
    labels = read_labels(reader)
    missing = sorted(set(labels) - set(cases))
    if missing:
        print(f"{len(missing)} ids are not in {split}, e.g. {missing[0]}", file=sys.stderr)
        return 2
    agree: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    tool_all = tool_agreed = n_agreed = 0
    for cid, (category, certainty) in labels.items():
        case = cases[cid]
        same = category == case["category"]
        agree[certainty] += same
        seen[certainty] += 1
        d = classify(case["log"], engine=case.get("engine"), exit_code=case.get("exit_code"))
        right = d.label == case["category"]
        tool_all += right
        if same:
            n_agreed += 1
            tool_agreed += right
    n = sum(seen.values())
    print(f"second reader against the corpus label, {split}:")
    for certainty in sorted(seen):
        print(
            f"  reader {certainty:7} {agree[certainty] / seen[certainty]:.2f}  n={seen[certainty]}"
        )
    print(f"classifier on all {n}: {tool_all / n:.4f}")
    print(f"classifier on the {n_agreed} both readers agree on: {tool_agreed / n_agreed:.4f}")
    print(f"agreement={sum(agree.values()) / n:.4f} n={n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
