"""Python tracebacks in engine logs: frames and the final exception line.

Logs interleave ranks and cut tracebacks short, so the reader is forgiving: a run of
``File "...", line N, in func`` lines followed by an ``SomethingError: message`` line is a
traceback even without its ``Traceback (most recent call last):`` header, and an exception
line standing alone (``RuntimeError: CUDA error: ...``) still counts as a final exception.
Chained tracebacks ("During handling of the above exception ...") yield one entry each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bringup.diagnose.logtext import content

_HEADER = re.compile(r"Traceback \(most recent call last\)")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>.]+)')
_EXCEPTION = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt)|Exception|"
    r"KeyError|AssertionError|StopIteration))(?::\s*(?P<msg>.*))?$"
)


@dataclass
class Frame:
    index: int  # line index in the log
    path: str
    func: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.func}"


@dataclass
class Traceback:
    frames: list[Frame] = field(default_factory=list)
    exc_index: int | None = None
    exc_type: str = ""
    exc_message: str = ""

    def frames_in(self, marker: str | None) -> list[Frame]:
        if not marker:
            return []
        return [f for f in self.frames if marker in f.path.replace("\\", "/")]


def exception_of(text: str) -> tuple[str, str] | None:
    """(type, message) when the line's content is a Python exception line."""
    m = _EXCEPTION.match(content(text))
    if not m:
        return None
    return m.group("type"), (m.group("msg") or "").strip()


def read_tracebacks(lines: list[str]) -> list[Traceback]:
    found: list[Traceback] = []
    current: Traceback | None = None
    for i, raw in enumerate(lines):
        text = content(raw)
        if _HEADER.search(text):
            current = Traceback()
            continue
        frame = _FRAME.search(text)
        if frame:
            if current is None:
                current = Traceback()
            current.frames.append(Frame(i, frame.group("path"), frame.group("func")))
            continue
        exc = _EXCEPTION.match(text)
        if exc:
            tb = current or Traceback()
            tb.exc_index = i
            tb.exc_type = exc.group("type")
            tb.exc_message = (exc.group("msg") or "").strip()
            found.append(tb)
            current = None
    return found


def final_exception_lines(tracebacks: list[Traceback]) -> set[int]:
    return {tb.exc_index for tb in tracebacks if tb.exc_index is not None}
