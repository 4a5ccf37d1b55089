"""How far each built-in engine's knowledge reaches outside its own folder.

For every built-in engine (the modules the registry loads, less the generic ``command``
engine, whose name is an ordinary word, and engines bringup only diagnoses), count the
Python source files under ``src/bringup/`` that name the engine although they lie outside
its own module or folder, outside ``testing/`` (the simulated engine imitates every engine
on purpose) and apart from the registry's one line per built-in. A file "names" an engine
when its code does: an identifier (``VLLMAdapter``, ``rules_sglang``) or a string literal
(``"llama.cpp"``, ``"bringup.engines.trtllm"``) holds one of the engine's names (its name,
aliases, display name, module name). Comments and docstrings are prose and are not
counted. Target: 0.

    .venv/bin/python bench/engine_footprint.py [--verbose]

Last line: ``files_outside_engine_folder=<int> engines=<int>``.
"""

from __future__ import annotations

import importlib
import io
import re
import sys
import tokenize
from pathlib import Path

from bringup.engines import registry

ROOT = Path(registry.__file__).resolve().parents[1]  # src/bringup
GENERIC = {"command"}
_STATEMENT_START = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)


def _compact(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def engine_names() -> dict[str, tuple[Path, set[str]]]:
    """engine -> (its own file or folder, the names that identify it)."""
    out: dict[str, tuple[Path, set[str]]] = {}
    for modname in registry.BUILTIN_MODULES:
        module = importlib.import_module(modname)
        found: list[object] = []
        module.register_engines(register=found.append)
        for adapter in found:
            name = str(getattr(adapter, "name", ""))
            if not name or name in GENERIC or not getattr(adapter, "launchable", True):
                continue  # the generic engine, or one known to diagnosis only
            file = Path(str(module.__file__)).resolve()
            own = file.parent if file.name == "__init__.py" else file
            names = {name, *getattr(adapter, "aliases", ()), getattr(adapter, "display", "")}
            names.add(modname.rsplit(".", 1)[-1] if file.name != "__init__.py" else own.name)
            out[name] = (own, {n for n in names if len(_compact(n)) >= 4})
    return out


def code_tokens(source: str) -> tuple[list[str], list[str]]:
    """(identifiers, string literals) of the code, docstrings and comments left out."""
    names: list[str] = []
    strings: list[str] = []
    previous = tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME:
            names.append(tok.string)
        elif tok.type == tokenize.STRING and previous not in _STATEMENT_START:
            strings.append(tok.string)  # a string that is a whole statement is a docstring
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type
    return names, strings


def _string_pattern(names: set[str]) -> re.Pattern[str]:
    alts = "|".join(sorted((re.escape(n.lower()) for n in names), key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9_])(?:{alts})(?![a-z0-9_])")


def _registry_lines(text: str) -> str:
    """registry.py without its one line per built-in module."""
    keep = [
        ln for ln in text.splitlines() if not re.fullmatch(r'\s*"bringup\.engines\.[\w.]+",', ln)
    ]
    return "\n".join(keep) + "\n"


def footprint() -> dict[str, list[Path]]:
    engines = engine_names()
    files = sorted(p for p in ROOT.rglob("*.py") if "testing" not in p.relative_to(ROOT).parts)
    hits: dict[str, list[Path]] = {e: [] for e in engines}
    for path in files:
        text = path.read_text(encoding="utf-8")
        if path == Path(registry.__file__).resolve():
            text = _registry_lines(text)
        names, strings = code_tokens(text)
        compact_names = [_compact(n) for n in names]
        for engine, (own, words) in engines.items():
            if path == own or own in path.parents:
                continue
            compact_words = {_compact(w) for w in words}
            pattern = _string_pattern(words)
            if any(w in n for n in compact_names for w in compact_words) or any(
                pattern.search(s.lower()) for s in strings
            ):
                hits[engine].append(path.relative_to(ROOT))
    return hits


def main(argv: list[str]) -> int:
    hits = footprint()
    total = 0
    for engine, paths in hits.items():
        total += len(paths)
        print(f"{engine}: {len(paths)} files outside its folder")
        if "--verbose" in argv:
            for p in paths:
                print(f"  {p}")
    print(f"files_outside_engine_folder={total} engines={len(hits)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
