"""Read an engine's own ``--help`` output into a table of flags.

Three layouts are understood: Python argparse (SGLang ``sglang serve --help``, vLLM
``vllm serve --help=all``), llama.cpp's ``llama-server --help`` and click (``trtllm-serve
serve --help``). Each option line becomes a :class:`FlagSpec` with every spelling of the
flag, its metavar, its choices where the help states them, and whether it takes a value.
:meth:`FlagTable.lookup` resolves a flag the way the engine's parser would, including
argparse's prefix matching (``allow_abbrev``), where an ambiguous prefix is an error.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Literal

Style = Literal["argparse", "llama", "click"]

_NAME = re.compile(r"-{1,2}[A-Za-z0-9][\w.+-]*")
_SEP = re.compile(r",\s+(?=-)| / (?=-)|\s{2,}|$")
_ENV = re.compile(r"\(env: ([A-Z0-9_]+)\)")
_ALLOWED = re.compile(r"allowed values: ([^()]+?)(?:\(|$)")
_LIST_ITEM = re.compile(r"^- ([\w.+-]+):")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
_DEFAULT = re.compile(r"\(default: ([\w.+-]+)\)")


@dataclass(frozen=True)
class FlagSpec:
    """One option of the engine's parser, with every spelling it accepts."""

    names: tuple[str, ...]
    metavar: str | None = None  # None: a switch that takes no value
    choices: tuple[str, ...] | None = None
    numeric_ok: bool = False  # besides the choices, a number is accepted (llama "N|auto")
    optional_value: bool = False  # argparse nargs='?'
    multiple: bool = False  # nargs '+' / '*'
    env: str | None = None
    help: str = ""

    @property
    def canonical(self) -> str:
        longs = [n for n in self.names if n.startswith("--")]
        return longs[0] if longs else self.names[0]

    @property
    def takes_value(self) -> bool:
        return self.metavar is not None

    @property
    def deprecated(self) -> bool:
        return bool(re.search(r"\bdeprecated\b", self.help[:200], re.I))


@dataclass(frozen=True)
class Lookup:
    """How the engine's parser would resolve one flag name."""

    spec: FlagSpec | None
    ambiguous: tuple[str, ...] = ()  # option strings an ambiguous prefix matched
    abbreviated: bool = False
    subkey: str | None = None  # "mode" of vLLM's "-cc.mode": a key inside a JSON flag


@dataclass
class FlagTable:
    """Every flag an engine's help lists, with where the help came from."""

    engine: str
    version: str
    source: str  # e.g. "installed /usr/bin/sglang" or "captured help of SGLang 0.5.23"
    style: Style
    flags: list[FlagSpec] = field(default_factory=list)
    allow_abbrev: bool = False
    normalize_underscores: bool = False  # vLLM accepts --max_num_seqs for --max-num-seqs
    dotted_keys: bool = False  # vLLM's "--compilation-config.mode 3" sets one JSON key
    _index: dict[str, FlagSpec] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for spec in self.flags:
            for name in spec.names:
                self._index.setdefault(name, spec)

    @property
    def origin(self) -> str:
        """``SGLang 0.5.23 (captured help ...)`` for messages."""
        return f"{self.engine} {self.version} ({self.source})"

    def names(self) -> list[str]:
        return list(self._index)

    def lookup(self, flag: str) -> Lookup:
        name = flag.split("=", 1)[0]
        if self.normalize_underscores and name.startswith("--"):
            head, dot, tail = name.partition(".")
            name = head.replace("_", "-") + dot + tail
        if name in self._index:
            return Lookup(self._index[name])
        head, dot, key = name.partition(".")
        if self.dotted_keys and dot and head in self._index:
            return Lookup(self._index[head], subkey=key)
        if self.allow_abbrev and name.startswith("--"):
            hits = sorted(n for n in self._index if n.startswith(name) and n.startswith("--"))
            specs = {id(self._index[n]): self._index[n] for n in hits}
            if len(specs) == 1:
                return Lookup(next(iter(specs.values())), abbreviated=True)
            if len(specs) > 1:
                return Lookup(None, ambiguous=tuple(hits))
        return Lookup(None)


def detect_style(text: str) -> Style:
    if re.search(r"^Usage:", text, re.M) and "\nOptions:" in text:
        return "click"
    if re.search(r"^usage:", text, re.M) or "\noptions:" in text or "optional arguments:" in text:
        return "argparse"
    return "llama"


@dataclass(frozen=True)
class ParseOptions:
    """How an engine's parser treats spellings its help does not print."""

    allow_abbrev: bool | None = None  # None: argparse's default (on) for argparse help
    normalize_underscores: bool = False  # vLLM: --max_num_seqs means --max-num-seqs
    dotted_keys: bool = False  # vLLM: --compilation-config.mode 3 sets one JSON key
    # regex whose group 1 is the version, for help that prints it only in passing (links)
    version_pattern: str | None = None


DEFAULT_OPTIONS = ParseOptions()


def parse_help(
    text: str,
    engine: str,
    version: str,
    source: str,
    style: Style | None = None,
    options: ParseOptions = DEFAULT_OPTIONS,
) -> FlagTable:
    """Parse help text of any known layout into a :class:`FlagTable`."""
    style = style or detect_style(text)
    flags = _parse_lines(text, style)
    if version == "unknown" and options.version_pattern:
        m = re.search(options.version_pattern, text)
        if m:
            version = m.group(1)
    abbrev = options.allow_abbrev
    return FlagTable(
        engine=engine,
        version=version,
        source=source,
        style=style,
        flags=flags,
        allow_abbrev=(style == "argparse") if abbrev is None else abbrev,
        normalize_underscores=options.normalize_underscores,
        dotted_keys=options.dotted_keys,
    )


def split_invocation(line: str) -> tuple[list[tuple[str, str]], str]:
    """``-c, --ctx-size N   help`` -> ``([("-c", ""), ("--ctx-size", "N")], "help")``."""
    s = line.strip()
    parts: list[tuple[str, str]] = []
    pos = 0
    while True:
        m = _NAME.match(s, pos)
        if not m:
            break
        name, pos = m.group(), m.end()
        rest = s[pos:]
        sep = _SEP.search(rest)
        assert sep is not None  # the pattern matches at end of string
        parts.append((name, rest[: sep.start()].strip()))
        pos += sep.end()
        if not re.match(r",| / ", sep.group()):
            break
    return parts, s[pos:].strip()


def _is_option_line(line: str, style: Style) -> bool:
    if style == "llama":
        return line.startswith("-")
    return line.startswith("  -") and not line.startswith("   ")


def _parse_lines(text: str, style: Style) -> list[FlagSpec]:
    blocks: list[tuple[list[tuple[str, str]], list[str]]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if _is_option_line(line, style):
            parts, first_help = split_invocation(line)
            if parts:
                blocks.append((parts, [first_help] if first_help else []))
                continue
        if blocks and line[:1].isspace():
            blocks[-1][1].append(line.strip())
        elif line and not line[:1].isspace():
            # a section heading ends the previous option's help
            blocks.append(([], []))
    return [spec for parts, lines in blocks if parts for spec in [_to_spec(parts, lines, style)]]


def _to_spec(parts: list[tuple[str, str]], lines: list[str], style: Style) -> FlagSpec:
    names = tuple(name for name, _ in parts)
    argfmt = next((fmt for _, fmt in reversed(parts) if fmt), "")
    help_text = " ".join(lines)
    env = _ENV.search(help_text)
    spec = FlagSpec(names=names, help=help_text, env=env.group(1) if env else None)
    if not argfmt:
        return spec
    if style == "argparse":
        return _argparse_arg(spec, argfmt)
    if style == "click":
        return _click_arg(spec, argfmt)
    return _llama_arg(spec, argfmt, lines)


def _with(spec: FlagSpec, **kw: object) -> FlagSpec:
    from dataclasses import replace

    return replace(spec, **kw)  # type: ignore[arg-type]


def _braces(fmt: str) -> tuple[str, ...] | None:
    m = re.fullmatch(r"\{([^{}]*)\}", fmt)
    return tuple(c for c in m.group(1).split(",")) if m else None


def _argparse_arg(spec: FlagSpec, fmt: str) -> FlagSpec:
    multiple = fmt.endswith("...]")
    optional = fmt.startswith("[") and not multiple and not fmt.startswith("['")
    first = fmt.split(" ", 1)[0].strip("[]") if multiple else fmt
    if optional:
        first = fmt[1:-1]
    if first.startswith("[{"):
        first = first[1:]
    choices = _braces(first)
    if choices is None and fmt.startswith("['"):
        try:
            parsed = ast.literal_eval(fmt)
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            choices = tuple(str(c) for c in parsed)
    return _with(spec, metavar=fmt, choices=choices, optional_value=optional, multiple=multiple)


def _click_arg(spec: FlagSpec, fmt: str) -> FlagSpec:
    m = re.fullmatch(r"\[([^\[\]]*\|[^\[\]]*)\]", fmt)
    choices = tuple(m.group(1).split("|")) if m else None
    return _with(spec, metavar=fmt, choices=choices)


def _llama_arg(spec: FlagSpec, fmt: str, lines: list[str]) -> FlagSpec:
    inner = fmt
    m = re.fullmatch(r"[\[<]([^\[\]<>]*)[\]>]", fmt)
    if m:
        inner = m.group(1)
    choices: tuple[str, ...] | None = _braces(fmt)
    numeric = False
    if choices is None and "|" in inner and " " not in inner:
        alts = inner.split("|")
        numeric = any(_PLACEHOLDER.match(a) for a in alts)
        words = tuple(a for a in alts if not _PLACEHOLDER.match(a))
        choices = words or None
    help_text = " ".join(lines)
    allowed = _ALLOWED.search(help_text)
    if choices is None and allowed:
        choices = tuple(v.strip() for v in allowed.group(1).split(",") if v.strip())
    multiple = False
    if choices is None and re.fullmatch(r"[a-z0-9][\w-]*(,[a-z0-9][\w-]*)+", fmt):
        choices, multiple = tuple(fmt.split(",")), True  # a comma-separated list of these
    if choices is None and _PLACEHOLDER.match(fmt) and fmt not in ("N", "M", "P", "F"):
        items = [m.group(1) for ln in lines if (m := _LIST_ITEM.match(ln))]
        default = _DEFAULT.search(help_text)
        # the default is not always among the listed items ("--reasoning-format", auto)
        if items and default and default.group(1) not in items:
            items.append(default.group(1))
        choices = tuple(items) or None
    return _with(spec, metavar=fmt, choices=choices, numeric_ok=numeric, multiple=multiple)
