"""Python tracebacks in engine logs: frames and the final exception line.

Logs interleave ranks and cut tracebacks short, so the reader is forgiving: a run of
``File "...", line N, in func`` lines followed by an ``SomethingError: message`` line is a
traceback even without its ``Traceback (most recent call last):`` header, and an exception
line standing alone (``RuntimeError: CUDA error: ...``) still counts as a final exception.
A rich traceback (a box of ``/path/file.py:89 in func`` frames, TGI's and typer's) is read
the same way once ``content`` has taken its borders off. Chained tracebacks ("During
handling of the above exception ...") yield one entry each.
A traceback cut off after its last frame's ``raise SomeError("...")`` source line (posts
often stop there) counts that ``raise`` as its exception line; one cut off anywhere else at
the end of the log is kept without an exception line (its frames still tell where it was).
``failed_importing(tb)`` says the exception was raised while a module was being imported.
An exception that only counts what a settings model refused (pydantic's ``1 validation error
for ParallelConfig``) wraps its message: the refused field and the validator's own words
(``  Value error, Failed to import Ray: ...``) follow it on lines of the same log record.
Those lines are its ``message_lines``: part of the final exception's message, where the
cause is named; the wrapper's own line names only the kind of failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bringup.diagnose.logtext import content, prefix_of

_HEADER = re.compile(r"Traceback \(most recent call last\)")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>.]+)')
# a frame as rich prints it inside its box: "/path/to/file.py:89 in serve"
_RICH_FRAME = re.compile(
    r"^(?P<path>(?:[A-Za-z]:)?[/\\~][^:]*\.py):(?P<line>\d+) in (?P<func>[\w<>.]+)\s*$"
)
_EXCEPTION = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt)|Exception|"
    r"KeyError|AssertionError|StopIteration))(?::\s*(?P<msg>.*))?$"
)
_LITERAL = re.compile(r"^f?[\"']+|[\"']+$")  # the quotes around raise's message
_RAISE = re.compile(r"^raise (?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)\((?P<msg>.*?)\)?$")
# pydantic's ValidationError (v1 and v2): a count and a model name, the errors below it
_WRAPPER = re.compile(r"^\d+ validation errors? for [\w.]+\s*$")
_CHAINED = re.compile(r"^(?:During handling of the above exception|The above exception was)")
_WRAPPED_SPAN = 40  # lines a wrapped message may run to (pydantic prints ~3 per error)
# how pydantic ends each error: "[type=value_error, ...]" (v1: "(type=value_error)"), then
# its link; lines past the last such end are not the exception's
_ERROR_END = re.compile(r"[\[(]type=\w|errors\.pydantic\.dev/")


@dataclass
class Frame:
    index: int  # line index in the log
    path: str
    func: str
    code: str = ""  # the source line shown under the frame, if any

    @property
    def where(self) -> str:
        return f"{self.path}:{self.func}"


@dataclass
class Traceback:
    frames: list[Frame] = field(default_factory=list)
    exc_index: int | None = None
    exc_type: str = ""
    exc_message: str = ""
    # the lines after the exception line that carry its message (a wrapper's errors)
    message_lines: list[int] = field(default_factory=list)

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


# an exception line quoted inside a sentence ("I got this error for X: ValueError: ...", a
# backticked "`RuntimeError: ...`"): the type must follow a space, colon, quote or bracket and
# be followed by its message, so a word like "ValueErrors" in prose is not one
_EMBEDDED = re.compile(
    r"(?<=[\s:`'\"(\[])(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S.*?)[`'\")\]]*\s*$"
)


def embedded_exception(text: str) -> str | None:
    """The exception line a sentence quotes, from its type to the end of the line, or None
    where the line is itself an exception line (or quotes none)."""
    if ("Error: " not in text and "Exception: " not in text) or _EXCEPTION.match(text):
        return None  # (the substring test first: most lines quote nothing, and it is cheap)
    m = _EMBEDDED.search(text)
    return m.group("exc") if m else None


def read_tracebacks(lines: list[str]) -> list[Traceback]:
    found: list[Traceback] = []
    current: Traceback | None = None
    raised: tuple[int, str, str] | None = None  # the last frame's "raise X(...)" line

    def cut_short(at_end: bool = False) -> None:
        if current is None or not current.frames:
            return
        if raised is not None:
            current.exc_index, current.exc_type, current.exc_message = raised
            found.append(current)
        elif at_end:
            found.append(current)

    for i, raw in enumerate(lines):
        text = content(raw)
        if _HEADER.search(text):
            cut_short()
            current, raised = Traceback(), None
            continue
        frame = _FRAME.search(text) or _RICH_FRAME.match(text)
        if frame:
            if current is None:
                current = Traceback()
            current.frames.append(Frame(i, frame.group("path"), frame.group("func")))
            raised = None
            continue
        if current is not None and current.frames:
            if not current.frames[-1].code and current.frames[-1].index == i - 1:
                current.frames[-1].code = text
            r = _RAISE.match(text)
            if r:
                raised = (i, r.group("type"), _LITERAL.sub("", r.group("msg")))
                continue
        exc = _EXCEPTION.match(text)
        if exc:
            tb = current or Traceback()
            tb.exc_index = i
            tb.exc_type = exc.group("type")
            tb.exc_message = (exc.group("msg") or "").strip()
            found.append(tb)
            current, raised = None, None
    cut_short(at_end=True)
    for tb in found:
        if tb.exc_index is not None and _WRAPPER.match(tb.exc_message):
            tb.message_lines = _wrapped(lines, tb.exc_index)
    return found


def _wrapped(lines: list[str], at: int) -> list[int]:
    """The lines after a wrapper exception's line that belong to its log record: the same
    logger prefix (vLLM's process tag, a level and time), not blank, not the start of
    another traceback or exception, up to the end of its last error where one shows (a log
    cut inside the errors keeps them all)."""
    prefix = prefix_of(lines[at])
    out: list[int] = []
    for i in range(at + 1, min(len(lines), at + 1 + _WRAPPED_SPAN)):
        text = content(lines[i])
        if (
            not text
            or prefix_of(lines[i]) != prefix
            or _HEADER.search(text)
            or _CHAINED.match(text)
            or _FRAME.search(text)
            or _EXCEPTION.match(text)
        ):
            break
        out.append(i)
    ends = [k for k, i in enumerate(out) if _ERROR_END.search(content(lines[i]))]
    return out[: ends[-1] + 1] if ends else out


_IMPORT = re.compile(r"^(?:import\s+\w|from\s+[\w.]+\s+import\s)")


def failed_importing(tb: Traceback) -> bool:
    """An ``import`` statement led into a module's top level and the exception came out of
    it: importing a package failed, not running it."""
    return any(
        inner.func == "<module>" and _IMPORT.match(outer.code)
        for outer, inner in zip(tb.frames, tb.frames[1:], strict=False)
    )


def final_exception_lines(tracebacks: list[Traceback]) -> set[int]:
    """The lines of each final exception's message: its exception line and the lines of a
    wrapped message."""
    return {
        i
        for tb in tracebacks
        if tb.exc_index is not None
        for i in (tb.exc_index, *tb.message_lines)
    }
