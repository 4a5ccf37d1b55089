"""The rules' answers on each retired held-out set as they were before any rule writer read it.

    python bench/diagnose_rules_unseen.py     # writes bench/data/diagnose/rules_unseen.jsonl

The rules of today were written from fit and the retired sets, so on those cases their
answers (and confidences) are fit figures: a fallback tuned against them would learn to
trust the rules more than unseen logs warrant. Each retired set was first measured with the
rules of one commit that had not read it; this script checks that commit out into a
temporary worktree (``git worktree add --detach``), runs its classifier on today's file of
the set, and records each case's label and confidence. ``bench/diagnose_train.py`` decides
where the learned fallback takes over on these records (the rules' confidence bands were
calibrated the same way then as now: below 0.5 the first measurements were right 0.20-0.22
of the time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "diagnose"
OUT = DATA / "rules_unseen.jsonl"
# the set, and the commit whose rules first measured it (README: "First measurement")
# ``heldout`` is left out: the rules that first read it (67600ef) still ended every log
# without a signal on a low-confidence hang, an answer today's rules no longer give, so
# their guessing band (0 right of 24) is unlike today's
FIRST_MEASURED = (
    ("heldout2", "ff2a186"),
    ("heldout3", "9ae9847"),
    # retired together on 2026-12-06: the rules of 504daff, the last commit whose rule
    # writers had read none of the three, answer each of them unseen
    ("heldout4", "504daff"),
    ("heldout5", "504daff"),
    ("heldout6", "504daff"),
    # retired on 2026-12-06 (second round): its rule round (504daff..bfb037e) was written
    # without reading it, so the rules of bfb037e answer it unseen; so do they the training
    # cases of fit2, collected after bfb037e
    ("heldout7", "bfb037e"),
    ("fit2", "bfb037e"),
    # retired on 2026-12-07 after its one measurement: nothing before d44e4fe read it
    ("heldout8", "d44e4fe"),
    # retired on 2026-12-07 (evening) after its one measurement, on c8dfc64
    ("heldout9", "c8dfc64"),
    # retired on 2026-12-08 once heldout12 was sealed beside them; no rule writer had read
    # either, so the rules that first measured each answer it unseen
    ("heldout10", "49b3377"),
    ("heldout11", "939ab4a"),
)
_RUN = """
import json, sys
from bringup.diagnose import classify
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    c = json.loads(line)
    try:  # the rules alone where the commit has a learned fallback
        d = classify(c["log"], engine=c.get("engine"), exit_code=c.get("exit_code"), learned=False)
    except TypeError:
        d = classify(c["log"], engine=c.get("engine"), exit_code=c.get("exit_code"))
    label = getattr(d, "label", None) or d.category.value
    print(json.dumps({"id": c["id"], "label": label, "confidence": d.confidence}))
"""


def answers(split: str, commit: str) -> list[dict[str, object]]:
    tree = Path(f"/tmp/diagnose-rules-{commit}")
    if not tree.exists():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit],
            check=True,
            capture_output=True,
        )
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run(
        [sys.executable, "-c", _RUN, str(DATA / f"{split}.jsonl")],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = [json.loads(ln) for ln in out.splitlines() if ln.strip()]
    return [{"split": split, "commit": commit, **r} for r in rows]


def main() -> int:
    rows = [r for split, commit in FIRST_MEASURED for r in answers(split, commit)]
    OUT.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for split, commit in FIRST_MEASURED:
        mine = [r for r in rows if r["split"] == split]
        print(f"{split}: rules of {commit}, n={len(mine)}")
    print(f"wrote {OUT.relative_to(ROOT)} n={len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
