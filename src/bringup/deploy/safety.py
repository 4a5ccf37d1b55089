"""What a deployment file may carry, checked before any file is written.

Each format quotes values its own way (``shlex.quote`` for bash, JSON strings for YAML,
systemd's quoting for a unit), so hostile values such as ``$(touch x)``, ``;``, quotes,
``%`` or ``$`` are reproduced literally. What quoting cannot make safe is refused with one
sentence:

- environment variable names are written bare (``export NAME=``, ``Environment=NAME=``,
  ``${NAME}``): only portable names ``[A-Za-z_][A-Za-z0-9_]*`` pass;
- a systemd unit is read line by line: a control character (a newline above all) in any
  value it carries could start a new directive, so such a value is refused there;
- ``--user`` must be a user name, ``--image`` one image reference (both written bare).

Values shown only in comments (engine version, host, ids) are passed through
:func:`comment_safe`, which spells control characters out instead of writing them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bringup.deploy.target import Deployment
from bringup.errors import BringupError
from bringup.secrets import SecretRef

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]{1,10}")
IMAGE_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}")
# C0, DEL, C1 and the Unicode line/paragraph separators: each can end a line somewhere
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def comment_safe(value: object) -> str:
    """``value`` with every control character spelled ``\\xNN`` (safe inside a comment)."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def check_env_name(name: str, where: str) -> None:
    if not ENV_NAME.fullmatch(name):
        raise BringupError(
            f"environment variable name {comment_safe(repr(name))} in {where} is not a valid "
            "name (letters, digits and underscores, not starting with a digit); rename it."
        )


def _systemd_values(dep: Deployment, user: str | None) -> Iterator[tuple[str, str]]:
    for i, word in enumerate(dep.argv):
        if isinstance(word, str):
            yield f"word {i} of the stored command line", word
    for name, value in dep.env.items():
        yield f"the value of environment variable {name}", value
    yield "--user", user or ""
    yield "model.name", dep.served_model or ""
    yield "the health path", dep.health_path
    yield "the server address", dep.probe_url


def check_deployment(dep: Deployment, target: str, user: str | None, image: str | None) -> None:
    """Raise :class:`BringupError` (one sentence) for what ``target`` cannot carry safely."""
    for name in dep.env:
        check_env_name(name, "the run's environment (engine.env / launch.env)")
    for name in dep.secret_env:
        check_env_name(name, "the run's secrets")
    for word in dep.argv:
        if isinstance(word, SecretRef):
            check_env_name(word.env, "the stored command line")
    if target == "systemd":
        if user is not None and not USER_NAME.fullmatch(user):
            raise BringupError(
                f"--user {comment_safe(repr(user))} is not a user name (letters, digits, "
                "'_', '.', '-'; or a numeric uid); pass a valid one."
            )
        for where, value in _systemd_values(dep, user):
            found = CONTROL.search(value)
            if found:
                raise BringupError(
                    f"{where} holds a control character ({ord(found.group()):#04x}), which a "
                    "systemd unit cannot carry safely; remove it, or deploy --to script, k8s "
                    "or compose, which quote it."
                )
    if image is not None and target in ("k8s", "compose") and not IMAGE_REF.fullmatch(image):
        raise BringupError(
            f"--image {comment_safe(repr(image))} is not an image reference "
            "(e.g. ghcr.io/org/name:tag); pass a valid one."
        )
