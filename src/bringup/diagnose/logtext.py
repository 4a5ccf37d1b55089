"""Log-line normalisation shared by the rules, the traceback reader and the hang reader.

``content(line)`` strips what loggers put in front of the message (ANSI colours, journald,
docker-compose, vLLM process tags and levels, SGLang timestamps, llama.cpp level letters, and
the loggers of wrappers: glog as Triton writes it, Python's logging with a time, loguru, Go's
log and zerolog) so rules match the message itself; evidence keeps the original line
verbatim. (Every spelling of an engine's name resolves in :mod:`bringup.engines.registry`.)
``log_lines(text)`` splits a log with each line cut to :data:`MAX_LINE` characters: the
work per log is bounded (a 50 MB line of garbage costs no more than a short one) and so
is every evidence line shown or stored.
"""

from __future__ import annotations

import re
from functools import lru_cache

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|#033\[[0-9;]*m")
# the borders of a box a rich traceback (TGI's, typer's) draws around its frames and locals
_BOX = re.compile(r"^(?:[│┃║]\s?)+|(?:\s*[│┃║])+\s*$")
# The logger-prefix grammar, in one place: the prefixes ``content`` strips, and which of
# them carry the line's level (a named group ``level``), read by ``level_of``.
_LEVEL_WORD = r"(?P<level>INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|TRACE)"
_PREFIXES = [
    # journald: "Feb 21 01:40:58 host ollama[402476]: "
    re.compile(r"^[A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \S+ [\w.-]+\[\d+\]: "),
    # docker compose: "ollama  | "
    re.compile(r"^[\w.-]+\s+\| ?"),
    # vLLM process tags, possibly nested: "(VllmWorker rank=1 pid=2699412) "
    re.compile(r"^(?:\([^()]*\bpid=\d+\)\s*)+"),
    # Ray worker tags: "(raylet) ", "(RayWorkerWrapper pid=12, ip=...) "
    re.compile(r"^\((?:raylet|[\w-]+ pid=[^)]*)\)\s*"),
    # vLLM level + date: "ERROR 08-11 10:45:36 [multiproc_executor.py:511] " (the date
    # is left out of some posts and formats: "ERROR [core.py:708] ")
    re.compile(
        rf"^{_LEVEL_WORD}(?: \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
        r"(?:\[[^\]]+\]|[\w.]+:\d+\])| \[[\w.-]+\.py:\d+\])\s?"
    ),
    # SGLang: "[2025-06-23 15:07:01 TP6] " (optionally followed by a level)
    re.compile(rf"^\[\d{{4}}-\d\d-\d\d[ T][\d:.,]+[^\]]*\]\s*(?:{_LEVEL_WORD}\s+)?"),
    # llama.cpp timestamped log: "[56285] 0.54.236.075 E "
    re.compile(r"^(?:\[\d+\] )?\d+(?:\.\d+)+ (?P<level>[IWEDT]) "),
    # llama.cpp level letter: "E llama_init_from_model: ..."
    re.compile(r"^(?P<level>[IWED]) (?=\w+\s*:|\S+\s+\w+:)"),
    # ISO time, level and target (TGI, Rust tracing, kubectl --timestamps):
    # "2024-05-01T01:17:12.123Z ERROR text_generation_launcher: "
    re.compile(
        r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+"
        rf"(?:{_LEVEL_WORD}\s+)?"
        # targets are module paths (shard-manager, text_generation_launcher) or spans
        # (warmup{...}): never a message's own first word ("RuntimeError: ", "error: ")
        r"(?:(?:[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+|\w+\{[^}]*\}): ){0,3}"
    ),
    # PyTorch's per-rank tag ("[rank0]: ") and OpenMPI's --tag-output ("[1,0]<stderr>:")
    re.compile(r"^\[rank\d+\]:\s?|^\[\d+,\d+\]<std(?:out|err)>:\s?"),
    # quoting in issue threads
    re.compile(r"^> ?"),
    # the wrappers' loggers (an inference server, a Python or Go service around the
    # engine): glog/absl as Triton writes it ("E1113 01:00:58.469718 3545 model.cc:692] ")
    re.compile(r"^(?P<level>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] "),
    # Python's logging with an asctime ("2024-05-01 10:00:00,123 - name - ERROR - ",
    # "2024-05-01 10:00:00 ERROR ", loguru's "... | ERROR    | mod:func:12 - ")
    re.compile(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: - [\w.-]+)?(?: - | \| | +)"
        rf"{_LEVEL_WORD}\b(?: +\| [\w.<>-]+(?::[\w<>-]+)*:\d+ - | +- +| +)"
        r"(?:[\w.-]+\.py:\d+ - )?"
    ),
    # a bracketed level after a bracketed time ("[ERROR] [root] ")
    re.compile(rf"^\[{_LEVEL_WORD}\]\s*(?:\[[\w.-]+\]\s*)?"),
    # Go's standard log ("2024/05/01 10:00:00 routes.go:12: ") and zerolog's console
    # ("12:34PM ERR ")
    re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:[\w.-]+\.go:\d+: )?"),
    re.compile(r"^\d{1,2}:\d\d(?:AM|PM) (?P<level>DBG|INF|WRN|ERR|FTL|TRC) "),
]
# Levels written where ``content`` keeps the text (rules read these lines whole): Python's
# basic logging ("WARNING:root:"), Go's slog ("level=ERROR"), glog/absl without the
# thread id and source a full prefix has ("E0123 12:34:56"; a full one is stripped above),
# a bracketed tag before the level ("[TRT-LLM] WARNING "), TensorRT-LLM's and TensorRT's
# bracketed levels ("[TRT-LLM] [I] ", "[TensorRT-LLM][ERROR] ", "[TRT] [E] "; the tag stays
# in the text: engine rules and fatal patterns read it).
_LEVEL_IN_TEXT = re.compile(
    rf"^{_LEVEL_WORD}:|\blevel={_LEVEL_WORD.replace('<level>', '<slog>')}\b|"
    r"^(?P<glog>[IWEF])\d{4} \d\d:|\] (?P<tagged>WARNING|ERROR) |"
    r"^(?:\[[\d/:-]+\]\s*)?\[(?:TRT-LLM|TensorRT-LLM|TRT)\]\s*"
    r"\[(?P<trt>[IWEVF]|ERROR|WARNING|INFO|DEBUG|VERBOSE)\]"
)
_LEVELS = {
    "I": "info",
    "W": "warning",
    "WARN": "warning",
    "E": "error",
    "F": "error",
    "D": "debug",
    "V": "debug",
    "VERBOSE": "debug",
    "T": "trace",
    "DBG": "debug",
    "INF": "info",
    "WRN": "warning",
    "ERR": "error",
    "FTL": "error",
    "TRC": "trace",
}


@lru_cache(maxsize=8192)  # the rules, the traceback reader and the answer reader ask alike
def _split(line: str) -> tuple[str | None, str]:
    """(level, message) of one log line: the level its logger prefix names, lower-case
    ("warning", "error", ...), and the message without colour codes and prefixes."""
    text = _ANSI.sub("", line).strip()
    if text[:1] in "│┃║":
        text = _BOX.sub("", text).strip()
    level = None
    for _ in range(4):  # prefixes nest (journald around docker around vLLM)
        before = text
        for pattern in _PREFIXES:
            m = pattern.match(text)
            if m:
                if m.groupdict().get("level"):
                    level = m.group("level")
                text = text[m.end() :]
        text = text.strip()
        if text == before:
            break
    if level is None:
        m = _LEVEL_IN_TEXT.search(text)
        if m:
            level = next(g for g in m.groups() if g)
    return (_LEVELS.get(level, level.lower()) if level else None), text


def content(line: str) -> str:
    """The message part of one log line, without colour codes and logger prefixes."""
    return _split(line)[1]


def prefix_of(line: str) -> str:
    """What the logger wrote in front of the message (process tag, time, level), or "":
    the lines of one multi-line record share it."""
    text = _ANSI.sub("", line).strip()
    message = content(line)
    end = text.rfind(message) if message else len(text)
    return text[: max(end, 0)].strip()


def level_of(line: str) -> str | None:
    """The level the line's logger wrote ("warning", "error", "info", ...), or None."""
    return _split(line)[0]


MAX_LINE = 2000  # characters kept of one log line; messages that decide fit well within


def log_lines(text: str) -> list[str]:
    """The log's lines, each at most :data:`MAX_LINE` characters (a marker says what was cut)."""
    return [
        ln if len(ln) <= MAX_LINE else f"{ln[:MAX_LINE]} … ({len(ln) - MAX_LINE} characters cut)"
        for ln in text.splitlines()
    ]


_QUOTING = re.compile(r"^(?:> ?)+")


def has_log_prefix(line: str) -> bool:
    """The line starts with what a logger writes (time, level, process tag), not only an
    issue thread's quoting: it is a log line, whatever its message reads like."""
    bare = _QUOTING.sub("", _ANSI.sub("", line).strip()).strip()
    if bare[:1] in "│┃║":  # a box's border is drawing, not a logger's prefix
        bare = _BOX.sub("", bare).strip()
    return content(line) != bare


_VOLATILE = re.compile(
    r"\b(?:TP|DP|EP|PP|rank|pid|GPU|device|cuda:|Rank )\s*=?\s*\d+|0x[0-9a-f]+", re.I
)


@lru_cache(maxsize=8192)  # asked once per rule hit: a line matching ten rules is read once
def dedupe_key(line: str) -> str:
    """Lines repeated by every rank (TP0..TP7) share one key, so evidence shows one."""
    return _VOLATILE.sub("#", content(line))


def nonblank(lines: list[str]) -> list[str]:
    return [ln for ln in lines if ln.strip()]


_SECRETS = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(
        r"(?i)(--?api[-_]?key[= ]|\b(?:api[_-]?key|token|password|secret)\s*[=:]\s*)"
        r"['\"]?[^\s'\",]{6,}"
    ),
]


def redact(line: str) -> str:
    """The line with API keys and tokens masked; evidence is stored and printed."""
    for pattern in _SECRETS:
        line = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + "***", line)
    return line
