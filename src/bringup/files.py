"""Write a file bringup produces (deployments, reports) without following a planted link.

``replace_file(path, text, mode)`` creates a fresh temporary file next to ``path`` with
``O_CREAT | O_EXCL | O_NOFOLLOW`` (it can only be a new regular file of ours), sets its
mode on the open descriptor (``fchmod`` never reaches another file), then renames it over
``path``. ``rename`` replaces a symlink at ``path`` by the file itself: nothing is written
through it and its target's mode is never changed. The standard library has no such
helper (``Path.write_text`` opens through symlinks), hence these few lines.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from bringup.errors import BringupError


def replace_file(path: str | Path, text: str, mode: int = 0o644) -> Path:
    target = Path(path)
    if target.is_dir() and not target.is_symlink():
        raise BringupError(f"{target} is a directory; pass a file path to write to.")
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o600)
    except OSError as exc:
        raise BringupError(
            f"cannot write {target} ({exc.strerror}); pass a writable folder."
        ) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def redact_file(path: str | Path, values: list[str], mask: str = "***") -> bool:
    """Mask each secret value (longer than 3 characters) inside a log file kept by bringup.

    The engine wrote the file (it may echo its own command line); it is rewritten line by
    line through a fresh temporary file, and only when something was masked. True then.
    """
    hidden = sorted({v.encode() for v in values if len(v) > 3}, key=len, reverse=True)
    target = Path(path)
    if not hidden or not target.is_file():
        return False
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    changed = False
    try:
        with os.fdopen(fd, "wb") as out, target.open("rb") as src:
            for line in src:
                clean = line
                for value in hidden:
                    clean = clean.replace(value, mask.encode())
                changed = changed or clean != line
                out.write(clean)
            os.fchmod(out.fileno(), os.stat(target).st_mode & 0o777)
        if changed:
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return changed
