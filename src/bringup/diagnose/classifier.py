"""Log text, exit status and stage -> Diagnosis.

Every rule of the engine's rule sets is tried on every line's message; a match scores the
rule's weight, times 1.3 on the final exception line of a Python traceback and 1.2 more when
that traceback runs through the engine's own package; warning-level lines count 0.6. Frame
rules score an exception by the frames it passed through (x1.2 for the engine's own frames).
The exit status adds its own evidence (SIGKILL -> OOM killer, SIGILL -> CPU lacks an
instruction set, ...). A category scores its best hit plus a little for each further
distinct hit; the best category wins. With no evidence at all the process either still
runs (a hang: see ``hang.diagnose_hang``) or exited without saying why (runtime_crash).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from bringup.diagnose.diagnosis import Diagnosis
from bringup.diagnose.hang import diagnose_hang
from bringup.diagnose.logtext import content, dedupe_key, log_lines, nonblank, redact
from bringup.diagnose.pytrace import final_exception_lines, read_tracebacks
from bringup.diagnose.ruleset import TRIGGERS, engine_remedy, rulesets_for
from bringup.verdict import Category, Stage

_HEAD, _TAIL = 500, 4000  # huge logs: the start (argparse) and the end (the failure) matter
_DECIDES = 0.75  # below this, nothing in the log explains the failure
_WEAK = 2.0  # a still-running engine with only "an error happened" lines is hanging
_FINAL_EXC = 1.3
_ENGINE_FRAME = 1.2
# a line the engine itself logged as a warning rarely decides a failure
_WARNING_LINE = re.compile(
    r"\bWARN(?:ING)? \d\d-\d\d \d\d:|\] WARNING |^WARNING:|\blevel=WARN\b|"
    r"^(?:\[\d+\] )?(?:\d+(?:\.\d+)+ )?W (?=\w)"
)
_WARNING = 0.6
_FRAME_LINE = re.compile(r'^\s*File "[^"]+", line \d+')
_HINT = re.compile(
    r"((?:please )?(?:try|consider) (?:to )?(?:lower|increas|reduc|decreas|sett|us|pass|add|"
    r"disabl|enabl|rais)\w*\b[^.\n]*)",
    re.IGNORECASE,
)


@dataclass
class _Hit:
    category: Category
    score: float
    index: int
    remedy: str | None
    frame_index: int | None = None


def _signal_of(exit_code: int | None) -> int | None:
    if exit_code is None:
        return None
    if exit_code < 0:
        return -exit_code
    if 128 < exit_code < 160:  # shells report death by signal N as 128+N
        return exit_code - 128
    return None


def _exit_evidence(exit_code: int | None) -> tuple[Category, float, str, str | None] | None:
    sig = _signal_of(exit_code)
    if sig is None:
        return None
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    line = f"process ended by {name} (exit status {exit_code})"
    if sig == signal.SIGKILL:
        return Category.OOM_HOST, 3.0, line, None
    if sig == signal.SIGILL:
        return (
            Category.UNSUPPORTED_HARDWARE,
            3.0,
            line,
            "the build uses CPU instructions this machine lacks (e.g. AVX-512): use a "
            "build for this CPU",
        )
    if sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE):
        return Category.RUNTIME_CRASH, 2.0, line, None
    return Category.RUNTIME_CRASH, 0.5, line, None


def _trim(lines: list[str]) -> list[str]:
    if len(lines) <= _HEAD + _TAIL:
        return lines
    return lines[:_HEAD] + lines[-_TAIL:]


def passes_gate(text: str) -> bool:
    low = text.lower()
    return any(word in low for word in TRIGGERS)


def _collect(lines: list[str], engine: str | None) -> list[_Hit]:
    rulesets = rulesets_for(engine)
    tracebacks = read_tracebacks(lines)
    finals = final_exception_lines(tracebacks)
    markers = [rs.module_marker for rs in rulesets if rs.module_marker]
    # an exception raised through the engine's own code is the engine's verdict
    in_engine = {
        tb.exc_index
        for tb in tracebacks
        if tb.exc_index is not None and any(tb.frames_in(m) for m in markers)
    }
    hits: list[_Hit] = []
    for i, raw in enumerate(lines):
        text = content(raw)
        if not text or _FRAME_LINE.match(text) or not passes_gate(text):
            continue
        boost = _FINAL_EXC if i in finals else 1.0
        if i in in_engine:
            boost *= _ENGINE_FRAME
        if _WARNING_LINE.search(raw):
            boost *= _WARNING
        for rs in rulesets:
            for r in rs.rules:
                m = r.pattern.search(text)
                if m:
                    hits.append(_Hit(r.category, r.weight * boost, i, r.remedy_for(m)))
    for tb in tracebacks:
        if tb.exc_index is None or not tb.frames:
            continue
        exc_name = tb.exc_type.rsplit(".", 1)[-1]
        own = {f.index for m in markers for f in tb.frames_in(m)}
        for rs in rulesets:
            for fr in rs.frame_rules:
                if not fr.exception.fullmatch(exc_name):
                    continue
                where = [f for f in tb.frames if fr.where.search(f.where)]
                if not where:
                    continue
                frame = where[-1]  # the innermost matching frame
                boost = _ENGINE_FRAME if frame.index in own else 1.0
                hits.append(
                    _Hit(fr.category, fr.weight * boost, tb.exc_index, fr.remedy, frame.index)
                )
    return hits


def _scores(hits: list[_Hit], lines: list[str]) -> dict[Category, float]:
    best: dict[Category, float] = {}
    seen: dict[Category, set[str]] = {}
    for h in hits:
        best[h.category] = max(best.get(h.category, 0.0), h.score)
        seen.setdefault(h.category, set()).add(dedupe_key(lines[h.index]))
    return {c: s + 0.1 * min(3, len(seen[c]) - 1) for c, s in best.items()}


def _evidence(hits: list[_Hit], lines: list[str], limit: int = 3) -> list[str]:
    out: list[str] = []
    keys: set[str] = set()
    for h in sorted(hits, key=lambda h: (-h.score, h.index)):
        for idx in (h.index, h.frame_index):
            if idx is None:
                continue
            key = dedupe_key(lines[idx])
            if key in keys:
                continue
            keys.add(key)
            out.append(redact(lines[idx].rstrip()))
        if len(out) >= limit:
            break
    return out[: limit + 1]


def _remedy(
    category: Category, won: list[_Hit], hits: list[_Hit], lines: list[str], engine: str | None
) -> str | None:
    for h in sorted(won, key=lambda h: -h.score):
        if h.remedy:
            return h.remedy
    decisive = {h.index for h in won}
    for idx in sorted(decisive):
        m = _HINT.search(content(lines[idx]))
        if m:
            return m.group(1).strip().rstrip(",;:")
    for h in hits:  # a remedy attached to the same line by a rule of another category
        if h.index in decisive and h.remedy:
            return h.remedy
    return engine_remedy(engine, category)


def _confidence(ranked: list[tuple[Category, float]]) -> float:
    top = ranked[0][1]
    second = ranked[1][1] if len(ranked) > 1 else 0.0
    base = top / (top + 1.5)
    margin = (top - second) / top
    return round(min(0.97, base * (0.7 + 0.3 * margin)), 2)


def classify(
    text: str,
    *,
    engine: str | None = None,
    exit_code: int | None = None,
    stage: Stage | None = None,
) -> Diagnosis:
    """Why a trial failed, from its log text, the exit status (None: still running) and the
    stage it failed in (None: unknown)."""
    lines = _trim(log_lines(text))
    hits = _collect(lines, engine)
    exit_ev = _exit_evidence(exit_code)
    if exit_ev is not None:
        lines = [*lines, exit_ev[2]]
        hits.append(_Hit(exit_ev[0], exit_ev[1], len(lines) - 1, exit_ev[3]))
    scores = _scores(hits, lines)
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    weak_only = bool(ranked) and ranked[0][0] is Category.RUNTIME_CRASH and ranked[0][1] < _WEAK
    if ranked and ranked[0][1] >= _DECIDES and not (exit_code is None and weak_only):
        category = ranked[0][0]
        won = [h for h in hits if h.category is category]
        return Diagnosis(
            category,
            _evidence(won, lines),
            _remedy(category, won, hits, lines, engine),
            _confidence(ranked),
        )
    if exit_code is None and stage in (None, Stage.LAUNCHING, Stage.READY):
        return diagnose_hang(text, engine)
    tail = [redact(ln.rstrip()) for ln in nonblank(lines)[-3:]]
    detail = "exited" if exit_code is not None else "failed"
    if exit_code == 0:
        tail.append("process exited with status 0 before it was ready")
    return Diagnosis(
        Category.RUNTIME_CRASH,
        tail or [f"process {detail} without printing a reason"],
        "run the engine's command by hand to see why it stops",
        0.2,
    )
