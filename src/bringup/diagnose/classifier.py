"""Log text, exit status and stage -> Diagnosis.

Every rule of the engine's rule sets is tried on every line's message; a match scores the
rule's weight, times 1.3 on the final exception line of a Python traceback and 1.2 more when
that traceback runs through the engine's own package; warning-level lines count 0.6. A
wrapper exception's message (pydantic's errors under "1 validation error for
ParallelConfig", :mod:`bringup.diagnose.pytrace`) is part of the final exception: its lines
weigh the same, and where the wrapper was raised names only a kind of failure. Frame
rules score an exception by the frames it passed through (x1.2 for the engine's own frames).
The exit status adds its own evidence (SIGKILL -> OOM killer, SIGILL -> CPU lacks an
instruction set, ...). A category scores its best hit plus a little for each further
distinct hit; the best category wins, and its best-scoring hit is the deciding rule (its id
and the flags the category's rules implicate go with the diagnosis). Answers quoted in the
log (empty or garbage text) are read by ``outputtext`` and score as ``garbage_output``.
A line the engine logged at error level counts as a weak crash whatever its message. A rule
runs only on lines holding one of the literal strings its matches need
(:mod:`bringup.diagnose.literals`), so the work per line stays small however many rules
there are. When the deciding rule names only a kind of failure (weight below 2, or a
``consequence``), the answer is a guess: confidence under 0.5, however far it leads.

Without a deciding signal, ``startup_timeout_or_hang`` needs evidence of a hang: the caller
knows the engine still runs (``exit_code`` None during launch/readiness), or the log stops
on a start-up phase with nothing after it (a stalled log). An engine known to have exited
is a ``runtime_crash`` that printed no reason. Otherwise (a log of unknown exit with no
signal: ``bringup diagnose`` on a pasted log) the answer is *unknown* (``signal=False``),
with low confidence. Confidence is the calibrated strength of the winning evidence and its
margin over the runner-up (see ``_confidence``).
"""

from __future__ import annotations

import math
import re
import signal
from dataclasses import dataclass

from bringup.diagnose.diagnosis import Diagnosis
from bringup.diagnose.hang import diagnose_hang, stage_reached
from bringup.diagnose.literals import LiteralIndex
from bringup.diagnose.logtext import (
    content,
    dedupe_key,
    has_log_prefix,
    level_of,
    log_lines,
    nonblank,
    redact,
)
from bringup.diagnose.outputtext import output_signals, prose_lines
from bringup.diagnose.pytrace import (
    embedded_exception,
    failed_importing,
    final_exception_lines,
    read_tracebacks,
)
from bringup.diagnose.rule import Rule, RuleSet
from bringup.diagnose.ruleset import GENERIC_REMEDIES, TRIGGERS, engine_remedy, rulesets_for
from bringup.verdict import Category, Stage

_HEAD, _TAIL = 500, 4000  # huge logs: the start (argparse) and the end (the failure) matter
_DECIDES = 0.75  # below this, nothing in the log explains the failure
# fixed confidences of the fallbacks (calibrated on the fit corpus, see _confidence)
# None of these names a cause, so all are guesses (below GUESS_BELOW): with the decisive
# line of each fit case taken away, such fallbacks were right about one time in three.
_STALLED_CONFIDENCE = 0.45  # the log stops on a start-up phase: a hang, or a cut-off post
_WEAK_CONFIDENCE = 0.4  # only "it stopped" lines: a crash, cause not shown
# the log ends on ordinary info lines, no phase named, no error, no exit: it stopped there
# or the post was cut (on fit and the retired sets, 2 of the 3 such logs were hangs)
_PROGRESS_CONFIDENCE = 0.3
_PROGRESS_TAIL = 3
_PROGRESS_NOTE = (
    "the log stops on the engine's ordinary progress lines, with no error and no exit "
    "shown: it was still working there (or the log was cut)"
)
_PY_WARNING = re.compile(r"^(?:\S+:\d+: )?\w*Warning: |^warnings\.warn\(")
_NAMES_FAILURE = re.compile(
    r"\b(?:error|errors|fail\w*|exception|traceback|abort\w*|kill\w*|oom|panic\w*|"
    r"fatal|refus\w*|denied|crash\w*|exit\w*|terminat\w*|invalid|not supported|"
    r"unsupported|cannot|unable|not found|out of memory|timed? ?out)\b",
    re.IGNORECASE,
)
_ANSWER_CONFIDENCE = 0.3  # the log is an answer someone posted: its text is the complaint
_NO_SIGNAL_CONFIDENCE = 0.1
# A rule below this weight names the kind of failure, not its cause ("a ValueError was
# raised", "CUDA error", "failed to load model"): when such a rule decides, the answer is
# a guess and says so, however far it leads the others (a confident wrong answer costs
# more than an admitted guess).
_CAUSE = 2.0
_PRIOR_CONFIDENCE = 0.45
_ANSWER_SHARE, _ANSWER_CHARS = 0.6, 40
_SCALE = 2.5  # score above _DECIDES at which confidence is ~63% of the way to its top
_CEILING = 0.95
_WEAK = 2.0  # a still-running engine with only "an error happened" lines is hanging
_FINAL_EXC = 1.3
# an exception raised while a package is imported: a broken or mismatched install
_IMPORTING = 3.0
_IMPORT_REMEDY = (
    "importing a package failed: reinstall it at the version the engine pins (the "
    "innermost frame names the package)"
)
_ENGINE_FRAME = 1.2
# a line the engine itself logged as a warning rarely decides a failure
_WARNING = 0.6
# a line the engine logged at error level: something failed, whatever the message says
# (the logger's prefix is gone from the text rules read, so its level is read off the raw
# line, by the prefix grammar of ``logtext``); alone it decides only a guessed crash
_ERROR_LEVEL = 0.8
_REFUSAL = re.compile(
    r"\b(?:not (?:yet )?supported|unsupported|unknown|unrecogni[sz]ed|cannot|can't|could not|"
    r"couldn't|unable|does not|doesn't|isn't|is not|invalid|missing|not found|requires?|"
    r"incompatible|too (?:old|new)|upgrade|mismatch|refused|denied|no such)\b",
    re.IGNORECASE,
)
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
    rule: str = ""  # "<rule set>:<rule name>", or "exit:<signal>"
    flags: tuple[str, ...] = ()
    transient: bool = False
    prior: bool = False  # a consequence or a rule below _CAUSE: it names a kind, not a cause


def _signal_of(exit_code: int | None) -> int | None:
    if exit_code is None:
        return None
    if exit_code < 0:
        return -exit_code
    if 128 < exit_code < 160:  # shells report death by signal N as 128+N
        return exit_code - 128
    return None


def _exit_evidence(exit_code: int | None) -> tuple[Category, float, str, str | None, str] | None:
    sig = _signal_of(exit_code)
    if sig is None:
        return None
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    line = f"process ended by {name} (exit status {exit_code})"
    rule = f"exit:{name}"
    if sig == signal.SIGKILL:
        return Category.OOM_HOST, 3.0, line, None, rule
    if sig == signal.SIGILL:
        return (
            Category.UNSUPPORTED_HARDWARE,
            3.0,
            line,
            "the build uses CPU instructions this machine lacks (e.g. AVX-512): use a "
            "build for this CPU",
            rule,
        )
    if sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE):
        return Category.RUNTIME_CRASH, 2.0, line, None, rule
    return Category.RUNTIME_CRASH, 0.5, line, None, rule


def _trim(lines: list[str]) -> list[str]:
    if len(lines) <= _HEAD + _TAIL:
        return lines
    return lines[:_HEAD] + lines[-_TAIL:]


def passes_gate(text: str) -> bool:
    return _gated(text.lower())


def _gated(low: str) -> bool:
    return any(word in low for word in TRIGGERS)


_INDEXES: dict[tuple[int, ...], tuple[list[tuple[str, Rule]], LiteralIndex]] = {}


def _rule_index(rulesets: tuple[RuleSet, ...]) -> tuple[list[tuple[str, Rule]], LiteralIndex]:
    """The line rules of these sets with their ids, and the literal index over them (built
    once per combination of sets: the sets are module-level constants)."""
    key = tuple(id(rs) for rs in rulesets)
    if key not in _INDEXES:
        rules = [(f"{rs.engine}:{r.name}", r) for rs in rulesets for r in rs.rules]
        _INDEXES[key] = rules, LiteralIndex([r.pattern for _, r in rules])
    return _INDEXES[key]


def _line_matches(
    text: str, rules: list[tuple[str, Rule]], index: LiteralIndex
) -> list[tuple[str, Rule, re.Match[str]]]:
    """Every rule matching the line, in rule order. A rule is only run on a line holding
    one of the literal strings each of its matches contains; on a line without any of the
    gate's words, only rules that have such strings run (the gate is a shortcut for rules
    without one, never a reason to miss a rule's own text)."""
    low = text.lower()
    candidates = index.may_match(low)
    if not _gated(low):
        candidates = [k for k in candidates if index.has_literal(k)]
    found = []
    for k in candidates:
        rule_id, r = rules[k]
        m = r.pattern.search(text)
        if m:
            found.append((rule_id, r, m))
    return found


def _collect(lines: list[str], engine: str | None) -> list[_Hit]:
    rulesets = rulesets_for(engine)
    tracebacks = read_tracebacks(lines)
    finals = final_exception_lines(tracebacks)
    markers = [rs.module_marker for rs in rulesets if rs.module_marker]
    # an exception raised through the engine's own code is the engine's verdict
    in_engine = {
        i
        for tb in tracebacks
        if tb.exc_index is not None and any(tb.frames_in(m) for m in markers)
        for i in (tb.exc_index, *tb.message_lines)
    }
    rules, index = _rule_index(rulesets)
    matched: dict[str, list[tuple[str, Rule, re.Match[str]]]] = {}
    shown: dict[re.Pattern[str], bool] = {}
    whole: list[str] = []  # the log's messages joined, only once a rule asks

    def shows(pattern: re.Pattern[str]) -> bool:
        if pattern not in shown:
            if not whole:
                whole.append("\n".join(content(raw) for raw in lines))
            shown[pattern] = pattern.search(whole[0]) is not None
        return shown[pattern]

    hits: list[_Hit] = []
    for i, raw in enumerate(lines):
        text = content(raw)
        if not text or _FRAME_LINE.match(text):
            continue
        level = level_of(raw)
        if level == "error":
            hits.append(
                _Hit(
                    Category.RUNTIME_CRASH,
                    _ERROR_LEVEL,
                    i,
                    None,
                    rule="log:error-level-line",
                    prior=True,
                )
            )
        boost = _FINAL_EXC if i in finals else 1.0
        if i in in_engine:
            boost *= _ENGINE_FRAME
        warned = level == "warning"
        if warned:
            boost *= _WARNING
        if text not in matched:  # ranks and retries repeat lines: each text is read once
            matched[text] = _line_matches(text, rules, index)
            # a sentence quoting an exception that no rule read as a cause: read the quote too
            weak = all(r.weight < _CAUSE for _, r, _ in matched[text])
            quoted = embedded_exception(text) if weak else None
            if quoted is not None:
                have = {rule_id for rule_id, _, _ in matched[text]}
                matched[text] += [
                    hit for hit in _line_matches(quoted, rules, index) if hit[0] not in have
                ]
        for rule_id, r, m in matched[text]:
            if r.also is not None and not shows(r.also):
                continue
            hits.append(
                _Hit(
                    r.category,
                    r.weight * boost,
                    i,
                    r.remedy_for(m),
                    rule=rule_id,
                    flags=r.flags,
                    transient=r.transient,
                    # a warning the engine lived through decides only as a guess
                    prior=r.consequence or r.weight < _CAUSE or warned,
                )
            )
    for tb in tracebacks:
        if not tb.frames:
            continue
        # a traceback posted without its exception line is read by its frames alone (type
        # ""): where it was is a kind of failure, not its cause, so such a hit is a guess
        cut = tb.exc_index is None
        at = tb.frames[-1].index if tb.exc_index is None else tb.exc_index
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
                    _Hit(
                        fr.category,
                        fr.weight * boost,
                        at,
                        fr.remedy,
                        frame.index,
                        rule=f"{rs.engine}:{fr.name}",
                        flags=fr.flags,
                        # where it was raised, weighed below a cause, names only a kind;
                        # so does where a wrapper was raised (its message names the cause)
                        prior=cut or fr.weight < _CAUSE or bool(tb.message_lines),
                    )
                )
    for tb in tracebacks:
        if failed_importing(tb):
            at = tb.exc_index if tb.exc_index is not None else tb.frames[-1].index
            hits.append(
                _Hit(
                    Category.MISSING_DEPENDENCY,
                    _IMPORTING,
                    at,
                    _IMPORT_REMEDY,
                    rule="traceback:failed-importing",
                )
            )
    for idx, weight, reason in output_signals(lines):
        hits.append(_Hit(Category.GARBAGE_OUTPUT, weight, idx, None, rule=f"output:{reason}"))
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
    category: Category, won: list[_Hit], lines: list[str], engine: str | None
) -> str | None:
    """The winning rules' own remedy, else a hint the decisive line gives, else the
    engine's remedy for the category."""
    for h in sorted(won, key=lambda h: -h.score):
        if h.remedy:
            return h.remedy
    decisive = {h.index for h in won}
    for idx in sorted(decisive):
        m = _HINT.search(content(lines[idx]))
        if m:
            return m.group(1).strip().rstrip(",;:")
    # never a remedy of another category's rule, even on the same line: it would send the
    # user after a cause the diagnosis did not find
    return engine_remedy(engine, category)


def _confidence(ranked: list[tuple[Category, float]]) -> float:
    """How often a diagnosis this strong is right: rises with the winning score (a rule of
    weight 5 alone reaches about 0.9) and falls when the runner-up scores close to it.
    Set so that the bands of ``bench/diagnose_eval.py`` hold on the fit corpus without
    claiming its perfect scores (rules fitted to a corpus are right there more often than
    on logs they never saw)."""
    top = ranked[0][1]
    second = ranked[1][1] if len(ranked) > 1 else 0.0
    strength = 1.0 - math.exp(-max(0.0, top - _DECIDES) / _SCALE)
    margin = (top - second) / top
    return round(min(_CEILING, (0.45 + 0.5 * strength) * (0.8 + 0.2 * margin)), 2)


def _progress(lines: list[str]) -> list[str]:
    """The log's non-blank lines less Python's warnings (a ``UserWarning`` printed while
    the engine works is not where it stopped)."""
    return [ln for ln in nonblank(lines) if not _PY_WARNING.search(content(ln))]


def _stalled(lines: list[str], engine: str | None) -> bool:
    """The log ends on a start-up phase line (or one plain line after it): the engine was
    busy there when it stopped, with nothing after it that looks like an error."""
    tail = _progress(lines)[-2:]
    if not tail or (len(tail) == 2 and passes_gate(content(tail[-1]))):
        tail = tail[-1:]
    phase, _ = stage_reached(tail, engine)
    return phase is not None


def _logged(line: str) -> bool:
    return has_log_prefix(line) or level_of(line) is not None


def _stops_on_progress(lines: list[str]) -> bool:
    """The log ends on the engine's own ordinary lines: its last lines are logger lines at
    info level (or below) that name no failure, with no exit status known. The engine was
    still working when the log stops, at a phase no table names: a hang, or a post cut
    short, so only a guess."""
    tail = _progress(lines)[-_PROGRESS_TAIL:]
    if len(tail) < _PROGRESS_TAIL or sum(_logged(ln) for ln in tail) < _PROGRESS_TAIL - 1:
        return False
    return all(
        level_of(ln) in (None, "info", "debug", "trace") and not _NAMES_FAILURE.search(content(ln))
        for ln in tail
    )


def _posted_answer(lines: list[str]) -> list[int]:
    """The prose lines when the log is mostly loose text: an answer someone posted as the
    complaint (its wrongness may not show to a detector, its presence does)."""
    # a refusal in plain words ("gemma3 is not supported yet") is a message, not an answer
    prose = [i for i in prose_lines(lines) if not _REFUSAL.search(content(lines[i]))]
    body = nonblank(lines)
    chars = sum(len(lines[i]) for i in prose)
    if body and len(prose) >= _ANSWER_SHARE * len(body) and chars >= _ANSWER_CHARS:
        return prose
    return []


def _decided(
    category: Category, won: list[_Hit], lines: list[str], engine: str | None, confidence: float
) -> Diagnosis:
    """The diagnosis of the winning category; its best-scoring hit (the earliest of equal
    scores, chosen here once) is the deciding rule, and when that rule names only a kind of
    failure the answer is a guess."""
    best = sorted(won, key=lambda h: (-h.score, h.index))
    if best[0].prior:
        confidence = min(confidence, _PRIOR_CONFIDENCE)
    return Diagnosis(
        category,
        _evidence(won, lines),
        _remedy(category, won, lines, engine),
        confidence,
        rule=best[0].rule or None,
        flags=list(dict.fromkeys(f for h in best for f in h.flags)),
        transient=best[0].transient,
    )


def _unknown_exit(
    text: str,
    lines: list[str],
    ranked: list[tuple[Category, float]],
    hits: list[_Hit],
    engine: str | None,
) -> Diagnosis:
    """No deciding signal and no exit status: a stalled log, a weak crash, or unknown."""
    if _stalled(lines, engine):
        d = diagnose_hang(text, engine)
        d.confidence = _STALLED_CONFIDENCE
        return d
    if ranked and ranked[0][1] >= _DECIDES:  # only "an error happened" lines
        category = ranked[0][0]
        won = [h for h in hits if h.category is category]
        return _decided(category, won, lines, engine, _WEAK_CONFIDENCE)
    answer = _posted_answer(lines)
    if answer:
        return Diagnosis(
            Category.GARBAGE_OUTPUT,
            ["the log is loose text, not engine log lines: read as an answer posted as the fault"]
            + [redact(lines[i].rstrip()) for i in answer[:2]],
            GENERIC_REMEDIES[Category.GARBAGE_OUTPUT],
            _ANSWER_CONFIDENCE,
            rule="output:posted-answer",
        )
    if _stops_on_progress(lines):
        d = diagnose_hang(text, engine)
        d.evidence.insert(0, _PROGRESS_NOTE)
        d.confidence = _PROGRESS_CONFIDENCE
        d.rule = "hang:log-stops-on-progress-lines"
        return d
    tail = [redact(ln.rstrip()) for ln in nonblank(lines)[-3:]]
    return Diagnosis(
        Category.RUNTIME_CRASH,
        tail or ["(the log is empty)"],
        "the log shows no failure signal: give the engine's full log, or its exit status "
        "(--exit-code), to diagnose it",
        _NO_SIGNAL_CONFIDENCE,
        signal=False,
        rule="generic:no-signal",
    )


def classify(
    text: str,
    *,
    engine: str | None = None,
    exit_code: int | None = None,
    stage: Stage | None = None,
    learned: bool = True,
) -> Diagnosis:
    """Why a trial failed, from its log text, the exit status (None: still running) and the
    stage it failed in (None: unknown).

    A log read without a stage (``bringup diagnose`` on a posted log: what the learned
    fallback was trained and cross-validated on) goes to the learned fallback where no
    rule is sure (:mod:`bringup.diagnose.learned`); ``learned=False`` gives the rules'
    answer alone. A trial's own log (a stage known) is diagnosed by the rules only: the
    model was never measured on whole engine logs, and a trial's verdict feeds the pruner."""
    rules = _by_rules(text, engine=engine, exit_code=exit_code, stage=stage)
    if not learned or stage is not None:
        return rules
    from bringup.diagnose.learned import fallback  # its model is read only when asked

    return fallback(rules, text)


def _by_rules(
    text: str,
    *,
    engine: str | None,
    exit_code: int | None,
    stage: Stage | None,
) -> Diagnosis:
    lines = _trim(log_lines(text))
    hits = _collect(lines, engine)
    exit_ev = _exit_evidence(exit_code)
    if exit_ev is not None:
        lines = [*lines, exit_ev[2]]
        hits.append(_Hit(exit_ev[0], exit_ev[1], len(lines) - 1, exit_ev[3], rule=exit_ev[4]))
    scores = _scores(hits, lines)
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    weak_only = bool(ranked) and ranked[0][0] is Category.RUNTIME_CRASH and ranked[0][1] < _WEAK
    if ranked and ranked[0][1] >= _DECIDES and not (exit_code is None and weak_only):
        category = ranked[0][0]
        won = [h for h in hits if h.category is category]
        return _decided(category, won, lines, engine, _confidence(ranked))
    if exit_code is None and stage in (Stage.LAUNCHING, Stage.READY):
        return diagnose_hang(text, engine)  # the caller knows it still runs: a hang
    if exit_code is None and stage is None:
        return _unknown_exit(text, lines, ranked, hits, engine)
    tail = [redact(ln.rstrip()) for ln in nonblank(lines)[-3:]]
    detail = "exited" if exit_code is not None else "failed"
    if exit_code == 0:
        tail.append("process exited with status 0 before it was ready")
    return Diagnosis(
        Category.RUNTIME_CRASH,
        tail or [f"process {detail} without printing a reason"],
        "run the engine's command by hand to see why it stops",
        0.2,
        rule="generic:no-reason-in-log",
    )
