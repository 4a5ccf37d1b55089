"""Generated text inside a log: is it the output of a broken engine?

People post what the engine *answered* as often as what it logged: a JSON completion with
an empty ``text``, ``Output: "fear fear fear ..."``, a chat reply of ``GGG``. The rule sets
cannot see it (an answer has none of the words that gate them), so this reader looks for
answers on its own and runs the same garbage detectors the correctness check uses
(:mod:`bringup.checks.garbage`) over them:

- an output *field* (``"text": ...``, ``"content": ...``, ``Output ...: ...``,
  ``Generated text: ...``): empty or garbage text there is strong evidence;
- a stretch of *prose* lines (no timestamp, level, path, traceback or key=value syntax):
  garbage there is evidence when the stretch is long enough to judge.

``output_signals(lines)`` returns (line index, weight, reason) per finding. Log lines are
never judged as text: a progress bar, a hex dump or an engine's listing of a device
("Device 0: ..., compute capability 6.1, VMM: yes") is not an answer; nor is an empty
answer the server aborted (``finish_reason`` abort or error: the message beside it says
why). ``prose_lines`` says which lines read as loose text (a log made only of them is a
posted answer, not a log).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from bringup.checks.garbage import (
    GarbageFinding,
    check_letter_junk,
    check_mojibake,
    check_repeated_unit,
    check_script_soup,
    check_special_tokens,
    check_word_salad,
)
from bringup.diagnose.logtext import content, has_log_prefix

Detector = Callable[[str, Sequence[str] | None], GarbageFinding | None]

_FIELD = re.compile(
    r"""(?:["'‘’“”](?:text|content|generated_text|text_output|output_text|output|response|completion)["'‘’“”]\s*:\s*|"""
    r"""^(?:Output|Generated text|Generated|Response|Completion|Answer|Output generated)"""
    r"""(?: \[[^\]]*\])*\s*[:=]\s*)(?P<value>.*)$""",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"""^[`"'‘“]+(?P<inner>.*?)[`"'’”]*[,}\]]*\s*$""")
_EMPTY = re.compile(r"""^(?:""|''|‘’|“”|``)(?:[,}\]\s]|$)""")
# what log lines (not answers) look like
_LOGGISH = re.compile(
    r"^\s*(?:\[|\(|\{|File \"|Traceback|\w+Error|\d{2,4}[-/:.]\d\d|[IWEDF]\d{4}|"
    r"(?:INFO|DEBUG|WARN|WARNING|ERROR|CRITICAL|time=)\b|[\w.]+:\d+\]|\$ |>>> |#)|"
    r"\b\w+=\S|\s{2,}at |[\\/][\w.-]+[\\/]|0x[0-9a-f]{6,}|https?://|"
    r"\b(?:traceback|error|failed|exception|warning)\b",
    re.IGNORECASE,
)
# not prose: indented code under a traceback frame, caret/tilde markers, separators, a
# listed fact ("- GPU name: ...", "* OS: ...", as an issue template's environment has them)
_NOT_PROSE_RAW = re.compile(
    r"^(?:> ?)?(?:\s{3,}\S|[\s~^]*$)|^[^\w]*$|^\s*[$❯%]|^\s*>>> |^\w[\w.-]*: |"
    r"^\s*[-*•]\s+\w[\w .()/-]{0,40}: \S|"
    # a record of fields, as an engine lists a device ("Device 0: NVIDIA GeForce GTX 1080
    # Ti, compute capability 6.1, VMM: yes"): two "name: value" pairs on one line
    r"^\s*\w[\w ().-]{0,30}: [^:\n]{1,120}?, [\w ]{1,30}: \S"
)
# an answer cut off by the server (the request aborted or failed): its empty text is the
# failure's consequence, and the message beside it says why
_ABORTED = re.compile(
    r"""["']finish_reason["']\s*:\s*\{?\s*(?:["']type["']\s*:\s*)?["'](?:abort|error)["']""",
    re.IGNORECASE,
)
# source code shown by a traceback (after the logger prefix is gone)
_CODE = re.compile(r"^[~^\s]+$|[\w\]]\(|\s=\s|^(?:return|import|from|def|class|raise|assert)\b")
_FIELD_DETECTORS = (
    check_special_tokens,
    check_repeated_unit,
    check_mojibake,
    check_script_soup,
    check_word_salad,
)
# loose lines are judged only by what no log line does: a tiny unit or one word looping,
# letters of many scripts, special-token markers
_PROSE_DETECTORS = (
    check_special_tokens,
    check_repeated_unit,
    check_script_soup,
    check_word_salad,
    check_letter_junk,
)
_PHRASE_LOOP = re.compile(r"(\S.{6,80}?)(?:\s*\1){4,}", re.DOTALL)
_FIELD_WEIGHT = 3.5  # an answer field that is empty or garbage
_PROSE_WEIGHT = 2.5  # a stretch of loose text that reads as garbage
_PROSE_MIN_CHARS = 40
_PROSE_MAX_LINES, _PROSE_MAX_CHARS = 200, 8000
_HEAD_CHARS = 240
_MAX_ANSWERS = 50  # answer fields judged per log: a batch dump says it in its first few


def _judge(text: str, detectors: tuple[Detector, ...]) -> str | None:
    for detector in detectors:
        finding = detector(text, None)
        if finding is not None:
            return f"{finding.detector}: {finding.reason}"
    return None


def _judge_answer(text: str) -> str | None:
    """An answer field: every detector, and a phrase looping over most of the answer
    (a posted answer that loops is the complaint itself)."""
    body = text.strip()
    if not body:
        return "the answer is empty"
    reason = _judge(body, _FIELD_DETECTORS)
    if reason:
        return reason
    if re.fullmatch(r"(\S)\1{2,}", body):
        return f"repeated_token: {body[:1]!r} is the whole answer"
    loop = _PHRASE_LOOP.search(body)
    if loop and len(loop.group(0)) >= 0.6 * len(body):
        return f"phrase_loop: {loop.group(1)[:40]!r} repeated over most of the answer"
    return None


def _field_value(text: str) -> str | None:
    m = _FIELD.search(text)
    if not m:
        return None
    return m.group("value")


def _is_prose(raw: str, text: str) -> bool:
    # a line's start shows whether it is a log line or code; reading only that keeps the
    # cost per line flat however long the line is
    head, raw_head = text[:_HEAD_CHARS], raw[:_HEAD_CHARS]
    return bool(
        head
        and not _LOGGISH.search(head)
        and not _NOT_PROSE_RAW.search(raw_head)
        and not _NOT_PROSE_RAW.search(head)
        and not _CODE.search(head)
    )


def prose_lines(lines: list[str]) -> list[int]:
    """Indices of the lines that read as loose text, not as log lines or code (a line a
    logger wrote, prefix and all, is a log line however plain its message)."""
    return [
        i
        for i, raw in enumerate(lines)
        if raw.strip() and not has_log_prefix(raw) and _is_prose(raw, content(raw))
    ]


def output_signals(lines: list[str]) -> list[tuple[int, float, str]]:
    """(line index, weight, reason) for each answer in the log that is empty or garbage."""
    found: list[tuple[int, float, str]] = []
    prose: list[int] = []
    judged = 0

    def flush() -> None:
        if not prose:
            return
        # judged on its start: the detectors read shares and loops, which a few thousand
        # characters show, and the work per log stays bounded
        text = "\n".join(content(lines[i]) for i in prose[:_PROSE_MAX_LINES])[:_PROSE_MAX_CHARS]
        if len(text) >= _PROSE_MIN_CHARS:
            reason = _judge(text, _PROSE_DETECTORS)
            if reason:
                found.append((prose[0], _PROSE_WEIGHT, reason))
        prose.clear()

    for i, raw in enumerate(lines):
        if not raw.strip():
            continue  # blank lines separate paragraphs of one answer as often as not
        text = content(raw).strip("`")
        value = _field_value(text) if judged < _MAX_ANSWERS else None
        if value is not None:
            judged += 1
            flush()
            if _EMPTY.match(value.strip()):
                if not _ABORTED.search(text):
                    found.append((i, _FIELD_WEIGHT, "the answer is empty"))
                continue
            m = _QUOTED.match(value.strip())
            reason = _judge_answer((m.group("inner") if m else value).replace("\\n", "\n"))
            if reason:
                found.append((i, _FIELD_WEIGHT, reason))
            continue
        if _is_prose(raw, text):
            prose.append(i)
        else:
            flush()
    flush()
    return found
