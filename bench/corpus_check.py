"""Check the labelled failure-log corpus: format, duplicates and the fit/held-out split.

Each line of ``bench/data/diagnose/{fit,heldout,heldout2,...,heldout13}.jsonl`` is one case
with exactly the fields id, engine, category, log, remedy, source, gpu, date (``exit_code`` may
be added when the post states it, and ``label_from`` says where the label was read: ``log`` when
the excerpt itself shows the cause, ``thread`` when the excerpt stops before it and the label
comes from the thread's title or a reply). The fit/heldout split is decided by the source alone (see
``side_of`` and the README next to the data), so this check can tell a case filed on the wrong
side without reading its log. ``heldout2`` to ``heldout13`` are later held-out
sets collected from other issues: any source may go there, but no source may sit in two splits
(an issue whose thread was read while rules were written cannot test them). A log that carries
a credential (a signed URL, a token) is refused. Duplicates are refused across all files: a
repeated id, the same source with the same log, and near-identical log text (the same bug
posted twice must not sit on two sides, nor count twice on one).

    python bench/corpus_check.py [FIT.jsonl HELDOUT.jsonl [HELDOUT2.jsonl [HELDOUT3.jsonl
                                 [HELDOUT4.jsonl [HELDOUT5.jsonl [HELDOUT6.jsonl
                                 [HELDOUT7.jsonl]]]]]]]

Prints one line per problem and, as its last line, ``problems=<int> n=<int>``; exits 1 when
there is any problem, 2 when a file is missing or unreadable.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "diagnose"
ENGINES = ("sglang", "vllm", "llama.cpp", "trtllm", "ollama", "tgi")
CATEGORIES = (
    "oom_gpu",
    "oom_host",
    "unsupported_hardware",
    "invalid_config",
    "model_incompatible",
    "missing_dependency",
    "distributed_failure",
    "port_in_use",
    "model_load_failure",
    "startup_timeout_or_hang",
    "garbage_output",
    "runtime_crash",
)
# the one list of which held-out set is where: retiring a set, or sealing a new one, is an edit
# here, and diagnose_eval, diagnose_train and corpus_add follow
# once held out, read by rule writers: heldout and heldout2 since 0187dcd, heldout3 since cb027c2,
# heldout4 to heldout7 since 2026-12-06, heldout8 and heldout9 since 2026-12-07, heldout10 and
# heldout11 since 2026-12-08 (each measured; heldout12 sealed beside them before either was read)
RETIRED = (
    "heldout",
    "heldout2",
    "heldout3",
    "heldout4",
    "heldout5",
    "heldout6",
    "heldout7",
    "heldout8",
    "heldout9",
    "heldout10",
    "heldout11",
)
# never read by rule writers; their cases are never printed
SEALED = ("heldout12", "heldout13")
SPLITS = ("fit", "fit2", *RETIRED, *SEALED)
REQUIRED = ("id", "engine", "category", "log", "remedy", "source", "gpu", "date")
OPTIONAL = ("exit_code", "label_from")
LABEL_FROM = ("log", "thread")
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{2,99}$")
_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+#[1-9]\d*$")
_DATE = re.compile(r"^(20[12]\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
_NEAR = 0.8  # Jaccard of word 4-gram sets above which two logs are the same post
# A pasted log can carry a credential (a pre-signed download URL, a Hub or API token); the
# corpus must never store one, even an expired one.
_SECRET = re.compile(
    r"X-Amz-(Signature|Credential)=|[?&](sig|signature|token)=[A-Za-z0-9%/+]{16,}"
    r"|\bhf_[A-Za-z0-9]{30,}|\bsk-[A-Za-z0-9]{20,}|\bBearer\s+[A-Za-z0-9._-]{20,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\beyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{10,}",
    re.IGNORECASE,
)
_MIN_LOG = 20  # characters: shorter is not a log a person could diagnose from


def side_of(source: str) -> str:
    """The split a new case belongs to, from its source alone: a third of the issues
    (by a hash of "owner/repo#number", case-folded) are held out, whatever they contain."""
    digest = hashlib.sha256(source.strip().lower().encode()).hexdigest()
    return "heldout" if int(digest, 16) % 3 == 0 else "fit"


def legacy_ids() -> set[str]:
    """Cases the rules were written from before the split existed: fit, whatever the hash."""
    path = DATA / "legacy_fit_ids.txt"
    return {ln.strip() for ln in path.read_text().splitlines() if ln.strip()}


def legacy_sources() -> set[str]:
    """The issues of the legacy cases: every case from one of them is fit too, so one issue
    never sits on both sides."""
    legacy = legacy_ids()
    fit = DATA / "fit.jsonl"
    if not fit.exists():
        return set()
    return {c["source"].lower() for c in load(fit) if c.get("id") in legacy}


def split_of(case_id: str, source: str, legacy: set[str], sources: set[str]) -> str:
    """The side a case belongs to: fit for the legacy cases and their issues, else the hash."""
    if case_id in legacy or source.strip().lower() in sources:
        return "fit"
    return side_of(source)


def _shingles(log: str) -> set[str]:
    # numbers, addresses and timestamps differ between two posts of one crash
    words = re.sub(r"0x[0-9a-f]+|\d+", "#", log.lower()).split()
    return {" ".join(words[i : i + 4]) for i in range(max(1, len(words) - 3))}


def _case_problems(case: dict[str, Any], where: str) -> list[str]:
    out = []
    missing = [f for f in REQUIRED if f not in case]
    extra = [f for f in case if f not in REQUIRED + OPTIONAL]
    if missing:
        out.append(f"{where}: missing field(s) {', '.join(missing)}")
    if extra:
        out.append(f"{where}: unknown field(s) {', '.join(extra)}")
    if not isinstance(case.get("id"), str) or not _ID.match(case["id"]):
        out.append(f"{where}: id must be lower-case letters, digits, '.', '_' or '-'")
    if case.get("engine") not in ENGINES:
        out.append(f"{where}: engine {case.get('engine')!r} is not one of {', '.join(ENGINES)}")
    if case.get("category") not in CATEGORIES:
        out.append(f"{where}: category {case.get('category')!r} is not a verdict category")
    log = case.get("log")
    if not isinstance(log, str) or len(log.strip()) < _MIN_LOG:
        out.append(f"{where}: log must be the posted text, at least {_MIN_LOG} characters")
    elif _SECRET.search(log):
        out.append(f"{where}: log carries a credential (signed URL or token): leave the case out")
    if not isinstance(case.get("source"), str) or not _SOURCE.match(case["source"]):
        out.append(f"{where}: source must read owner/repo#number")
    date = case.get("date")
    if date is not None and (not isinstance(date, str) or not _DATE.match(date)):
        out.append(f"{where}: date must be YYYY-MM-DD or null")
    for field in ("remedy", "gpu"):
        if case.get(field) is not None and not isinstance(case.get(field), str):
            out.append(f"{where}: {field} must be a string or null")
    if "exit_code" in case and not isinstance(case["exit_code"], int):
        out.append(f"{where}: exit_code must be an integer")
    if "label_from" in case and case["label_from"] not in LABEL_FROM:
        out.append(f"{where}: label_from must be one of {', '.join(LABEL_FROM)}")
    return out


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def check(files: dict[str, Path]) -> tuple[list[str], int]:
    """Problems of the corpus made of ``files`` (split name -> path), and its size."""
    problems: list[str] = []
    seen_ids: dict[str, str] = {}
    seen_logs: dict[tuple[str, str], str] = {}
    split_of_source: dict[str, tuple[str, str]] = {}
    kept: list[tuple[str, set[str]]] = []
    legacy, sources = legacy_ids(), legacy_sources()
    n = 0
    for split, path in files.items():
        for lineno, row in enumerate(path.read_text().splitlines(), 1):
            if not row.strip():
                continue
            n += 1
            where = f"{path.name}:{lineno}"
            try:
                case = json.loads(row)
            except json.JSONDecodeError as exc:
                problems.append(f"{where}: not JSON ({exc.msg})")
                continue
            problems += _case_problems(case, where)
            cid, source, log = case.get("id"), case.get("source"), case.get("log")
            if not isinstance(cid, str) or not isinstance(source, str) or not isinstance(log, str):
                continue
            where = f"{where} ({cid})"
            if cid in seen_ids:
                problems.append(f"{where}: id already used at {seen_ids[cid]}")
            seen_ids[cid] = where
            want = split_of(cid, source, legacy, sources)
            if split in ("fit", "heldout") and want != split:
                problems.append(f"{where}: source {source} belongs to {want}, not {split}")
            first = split_of_source.setdefault(source.strip().lower(), (split, where))
            if first[0] != split:
                problems.append(f"{where}: source {source} is already in {first[0]} at {first[1]}")
            key = (source.lower(), log.strip())
            if key in seen_logs:
                problems.append(f"{where}: same source and log as {seen_logs[key]}")
            seen_logs[key] = where
            mine = _shingles(log)
            for other, theirs in kept:
                if len(mine & theirs) / len(mine | theirs) >= _NEAR:
                    problems.append(f"{where}: log nearly identical to {other}'s")
            kept.append((where, mine))
    return problems, n


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [DATA / f"{split}.jsonl" for split in SPLITS]
    if not 2 <= len(paths) <= len(SPLITS):
        print(
            "usage: corpus_check.py [FIT.jsonl HELDOUT.jsonl [HELDOUT2.jsonl ... [FIT2.jsonl]]]"
            f" (the files of {', '.join(SPLITS)}, in that order)",
            file=sys.stderr,
        )
        return 2
    for path in paths:
        if not path.is_file():
            print(f"{path} does not exist: give the fit and held-out files", file=sys.stderr)
            return 2
    problems, n = check(dict(zip(SPLITS, paths, strict=False)))
    for line in problems:
        print(line)
    print(f"problems={len(problems)} n={n}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
