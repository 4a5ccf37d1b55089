"""Which environment variables and command-line values are secrets, and how to hide them.

A name looks secret when it contains KEY, TOKEN, SECRET, PASSWORD (or PASSWD, CREDENTIAL)
and does not name a file, path or directory (``--ssl-key-file`` is a path, not a key).
Deployments reference a secret by the environment variable that carries it; reports and
logs show :data:`MASK` instead of its value. The value itself is never returned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MASK = "***"

_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_NOT_SECRET = re.compile(r"(FILE|PATH|DIR|SIZE|COUNT|NAME)$", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """``HF_TOKEN``, ``--api-key`` yes; ``--ssl-key-file``, ``--cache-type-k`` no."""
    bare = name.lstrip("-").replace("-", "_")
    return bool(_SECRET.search(bare)) and not _NOT_SECRET.search(bare)


def env_name_for_flag(flag: str) -> str:
    """The environment variable a secret flag's value travels in: ``--api-key`` -> ``API_KEY``."""
    return re.sub(r"[^A-Z0-9]+", "_", flag.lstrip("-").upper()).strip("_") or "SECRET"


@dataclass(frozen=True)
class SecretRef:
    """An argv position (or env var) whose value must come from the environment ``env``."""

    env: str
    flag: str | None = None


@dataclass
class SplitArgv:
    """An argv with every secret value replaced by a reference.

    ``words`` holds plain strings and :class:`SecretRef` items; ``secrets`` lists the
    environment variables the deployment must provide.
    """

    words: list[str | SecretRef]
    secrets: list[str]


def split_argv(argv: list[str]) -> SplitArgv:
    """Find ``--api-key VALUE`` and ``--api-key=VALUE`` style secrets in a command line."""
    words: list[str | SecretRef] = []
    secrets: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        flag, eq, _ = word.partition("=")
        if word.startswith("-") and is_secret_name(flag):
            env = env_name_for_flag(flag)
            if env not in secrets:
                secrets.append(env)
            if eq:
                words.extend([flag, SecretRef(env, flag)])
                i += 1
                continue
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                words.extend([word, SecretRef(env, flag)])
                i += 2
                continue
        words.append(word)
        i += 1
    return SplitArgv(words, secrets)


def redact_argv(argv: list[str]) -> list[str]:
    """The command line with every secret value shown as ``***``."""
    return [MASK if isinstance(w, SecretRef) else w for w in split_argv(argv).words]


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) else v) for k, v in env.items()}


def redact_text(text: str, values: list[str]) -> str:
    """Replace each known secret value (longer than 3 characters) inside free text."""
    for value in sorted(values, key=len, reverse=True):
        if len(value) > 3:
            text = text.replace(value, MASK)
    return text


def secret_values(argv: list[str], env: Mapping[str, str]) -> list[str]:
    """The clear values of the secrets in a command line and an environment (for redaction)."""
    found = [v for k, v in env.items() if is_secret_name(k) and v]
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if not (word.startswith("-") and is_secret_name(flag)):
            continue
        if eq:
            found.append(value)
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            found.append(argv[i + 1])
    return found


def redact_flags(flags: Mapping[str, Any]) -> dict[str, Any]:
    """A configuration with the value of every secret-named flag shown as ``***``."""
    return {k: (MASK if is_secret_name(k) else v) for k, v in flags.items()}


def flag_secret_values(flags: Mapping[str, Any]) -> list[str]:
    """The clear values of secret-named flags (a switch, True/False, is no secret)."""
    return [str(v) for k, v in flags.items() if is_secret_name(k) and not isinstance(v, bool)]
