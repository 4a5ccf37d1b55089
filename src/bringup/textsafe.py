"""Text that came from an engine or a server, made safe to show on a terminal.

Server bodies, health answers, engine logs, versions and stored values may hold escape
sequences (clear screen, set the window title, move the cursor), bidirectional overrides
that reorder what is shown, or rich markup such as ``[/]``. :func:`printable` spells every
such character out (``\\x1b``), so the text is shown, never obeyed; rich renderers take it
as :class:`rich.text.Text` (never as markup), so brackets are shown literally.
"""

from __future__ import annotations

import re

# C0 (tab and newline excepted), DEL, C1, and the bidirectional controls
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAKS = re.compile(r"[\n\t\u2028\u2029]")


def _spell(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, multiline: bool = False) -> str:
    """``text`` with control characters spelled out; newlines kept only when ``multiline``."""
    out = _CONTROL.sub(_spell, str(text))
    return out if multiline else _LINE_BREAKS.sub(_spell, out)
