"""Log-line normalisation shared by the rules, the traceback reader and the hang reader.

``content(line)`` strips what loggers put in front of the message (ANSI colours, journald,
docker-compose, vLLM process tags and levels, SGLang timestamps, llama.cpp level letters) so
rules match the message itself; evidence keeps the original line verbatim. (Every spelling
of an engine's name resolves in :mod:`bringup.engines.registry`.)
``log_lines(text)`` splits a log with each line cut to :data:`MAX_LINE` characters: the
work per log is bounded (a 50 MB line of garbage costs no more than a short one) and so
is every evidence line shown or stored.
"""

from __future__ import annotations

import re
from functools import lru_cache

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|#033\[[0-9;]*m")
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
        r"^(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)(?: \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
        r"(?:\[[^\]]+\]|[\w.]+:\d+\])| \[[\w.-]+\.py:\d+\])\s?"
    ),
    # SGLang: "[2025-06-23 15:07:01 TP6] " (optionally followed by a level)
    re.compile(r"^\[\d{4}-\d\d-\d\d[ T][\d:.,]+[^\]]*\]\s*(?:(?:INFO|WARNING|ERROR|DEBUG)\s+)?"),
    # llama.cpp timestamped log: "[56285] 0.54.236.075 E "
    re.compile(r"^(?:\[\d+\] )?\d+(?:\.\d+)+ [IWEDT] "),
    # llama.cpp level letter: "E llama_init_from_model: ..."
    re.compile(r"^[IWED] (?=\w+\s*:|\S+\s+\w+:)"),
    # ISO time, level and target (TGI, Rust tracing, kubectl --timestamps):
    # "2024-05-01T01:17:12.123Z ERROR text_generation_launcher: "
    re.compile(
        r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+"
        r"(?:(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL)\s+)?"
        # targets are module paths (shard-manager, text_generation_launcher) or spans
        # (warmup{...}): never a message's own first word ("RuntimeError: ", "error: ")
        r"(?:(?:[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+|\w+\{[^}]*\}): ){0,3}"
    ),
    # PyTorch's per-rank tag ("[rank0]: ") and OpenMPI's --tag-output ("[1,0]<stderr>:")
    re.compile(r"^\[rank\d+\]:\s?|^\[\d+,\d+\]<std(?:out|err)>:\s?"),
    # quoting in issue threads
    re.compile(r"^> ?"),
]

MAX_LINE = 2000  # characters kept of one log line; messages that decide fit well within


def log_lines(text: str) -> list[str]:
    """The log's lines, each at most :data:`MAX_LINE` characters (a marker says what was cut)."""
    return [
        ln if len(ln) <= MAX_LINE else f"{ln[:MAX_LINE]} … ({len(ln) - MAX_LINE} characters cut)"
        for ln in text.splitlines()
    ]


@lru_cache(maxsize=8192)  # the rules, the traceback reader and the answer reader ask alike
def content(line: str) -> str:
    """The message part of one log line, without colour codes and logger prefixes."""
    text = _ANSI.sub("", line).strip()
    for _ in range(4):  # prefixes nest (journald around docker around vLLM)
        before = text
        for pattern in _PREFIXES:
            text = pattern.sub("", text, count=1)
        text = text.strip()
        if text == before:
            break
    return text


_QUOTING = re.compile(r"^(?:> ?)+")


def has_log_prefix(line: str) -> bool:
    """The line starts with what a logger writes (time, level, process tag), not only an
    issue thread's quoting: it is a log line, whatever its message reads like."""
    bare = _QUOTING.sub("", _ANSI.sub("", line).strip()).strip()
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
