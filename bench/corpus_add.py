"""Add labelled cases to the corpus, each filed on the side of the split its source decides.

A collector writes cases as plain-text blocks (no JSON escaping of logs by hand):

    @@ <id> | <engine> | <category> | <owner/repo#number> | <YYYY-MM-DD or -> | <gpu or ->
        [ | log|thread]
    <remedy, one line, or ->
    <the log excerpt, verbatim, any number of lines>

(the seventh field, optional, says where the label was read: ``log`` when the excerpt shows the
cause, ``thread`` when the excerpt stops before it and the title or a reply names it), and runs
``python bench/corpus_add.py BLOCKS.txt``. Each case is appended to fit.jsonl or heldout.jsonl
by ``corpus_check.split_of``; only counts are printed, so adding cases never shows the collector
what the held-out part holds. ``--to heldout2`` (or ``heldout3`` to ``heldout13``) appends every
case to that later held-out set instead (collected by someone who does not write rules; see the
README); ``--to fit2`` appends every case to ``fit2.jsonl``, fit cases collected as training
data, whatever the hash of their source. Then run ``corpus_check.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from corpus_check import DATA, LABEL_FROM, SPLITS, legacy_ids, legacy_sources, split_of

# every split but the two the hash of a source decides between (fit and heldout): the later
# held-out sets, held out whole, and fit2, training cases whatever the hash
LATER_SPLITS = tuple(s for s in SPLITS if s not in ("fit", "heldout"))


def parse(text: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for block in ("\n" + text).split("\n@@ ")[1:]:
        head, remedy, *log = block.split("\n")
        fields = [f.strip() for f in head.split("|")]
        if len(fields) not in (6, 7):
            raise SystemExit(f"header needs 6 '|'-separated fields, or 7 with log|thread: {head!r}")
        cid, engine, category, source, date, gpu = fields[:6]
        label_from = fields[6] if len(fields) == 7 else None
        if label_from is not None and label_from not in LABEL_FROM:
            raise SystemExit(
                f"the seventh field says where the label was read (log|thread): {head!r}"
            )
        while log and not log[-1].strip():
            log.pop()
        case: dict[str, Any] = {
            "id": cid,
            "engine": engine,
            "category": category,
            "log": "\n".join(log),
            "remedy": None if remedy.strip() in ("", "-") else remedy.strip(),
            "source": source,
            "gpu": None if gpu == "-" else gpu,
            "date": None if date == "-" else date,
        }
        if label_from is not None:
            case["label_from"] = label_from
        cases.append(case)
    return cases


def main(argv: list[str]) -> int:
    to = None
    if argv[:1] == ["--to"] and len(argv) > 1 and argv[1] in LATER_SPLITS:
        to, argv = argv[1], argv[2:]
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print(
            f"usage: corpus_add.py [--to {'|'.join(LATER_SPLITS)}] BLOCKS.txt (an existing file)",
            file=sys.stderr,
        )
        return 2
    cases = parse(Path(argv[0]).read_text())
    legacy, sources = legacy_ids(), legacy_sources()
    counts = {"fit": 0, "heldout": 0, **{split: 0 for split in LATER_SPLITS}}
    for case in cases:
        side = to or split_of(case["id"], case["source"], legacy, sources)
        with (DATA / f"{side}.jsonl").open("a") as out:
            out.write(json.dumps(case, ensure_ascii=False) + "\n")
        counts[side] += 1
    print(" ".join(["added"] + [f"{k}={v}" for k, v in counts.items()]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
