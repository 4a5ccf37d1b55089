"""Known-answer prompts: completion prompts whose right continuation is known.

A :class:`KnownAnswer` is a text-completion prompt (not chat), a token budget and one
expectation: ``exact`` (the first line equals it), ``prefix``, ``contains``, ``regex``
(searched) or ``numeric`` (the first number equals it). The built-in suite
(``suite.toml`` beside this module) was kept only where Gemma 3 270M base answers right at
temperature 0 on llama-server with f16 and q8_0 K caches. A spec extends it with
``[checks] suite_file`` (a TOML file of ``[[known_answer]]`` tables) and ``extra``
(inline tables of the same shape); ``known_answers = false`` drops the built-in ones.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bringup.errors import SpecError

if TYPE_CHECKING:
    from bringup.spec import Spec

KINDS = ("exact", "prefix", "contains", "regex", "numeric")
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class KnownAnswer:
    name: str
    prompt: str
    kind: str
    expected: str | float
    max_tokens: int = 8
    stop: tuple[str, ...] = field(default_factory=tuple)

    def expectation(self) -> str:
        return f"{self.kind} {self.expected!r}"

    def judge(self, output: str) -> bool:
        """True when the output meets the expectation."""
        text = output.strip()
        exp = self.expected
        if self.kind == "exact":
            return text.split("\n", 1)[0].strip() == str(exp)
        if self.kind == "prefix":
            return text.startswith(str(exp))
        if self.kind == "contains":
            return str(exp) in text
        if self.kind == "regex":
            return re.search(str(exp), output) is not None
        m = _NUMBER.search(text)
        if m is None:
            return False
        try:
            got = float(m.group(0).replace(",", ""))
        except ValueError:
            return False
        return math.isclose(got, float(exp), rel_tol=1e-6, abs_tol=1e-9)

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "known answer") -> KnownAnswer:
        kinds = [k for k in KINDS if k in d]
        if len(kinds) != 1:
            raise SpecError(
                f"{where}: give exactly one of {', '.join(KINDS)} (found {kinds or 'none'})."
            )
        prompt = d.get("prompt")
        if not isinstance(prompt, str) or not prompt:
            raise SpecError(f"{where}: 'prompt' must be a non-empty string.")
        kind = kinds[0]
        raw = d[kind]
        expected: str | float
        if kind == "numeric":
            if isinstance(raw, bool) or not isinstance(raw, int | float):
                raise SpecError(f"{where}: 'numeric' must be a number, not {raw!r}.")
            expected = float(raw)
        else:
            if not isinstance(raw, str):
                raise SpecError(f"{where}: '{kind}' must be a string, not {raw!r}.")
            if kind == "regex":
                try:
                    re.compile(raw)
                except re.error as exc:
                    raise SpecError(f"{where}: regex {raw!r} does not compile ({exc}).") from exc
            expected = raw
        max_tokens = d.get("max_tokens", 8)
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise SpecError(f"{where}: 'max_tokens' must be a positive integer.")
        stop = d.get("stop", [])
        if isinstance(stop, str):
            stop = [stop]
        return cls(
            name=str(d.get("name") or prompt[:24]),
            prompt=prompt,
            kind=kind,
            expected=expected,
            max_tokens=max_tokens,
            stop=tuple(str(s) for s in stop),
        )


def _read_suite(text: str, source: str) -> tuple[list[KnownAnswer], list[str]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: not valid TOML ({exc}).") from exc
    answers = [
        KnownAnswer.from_dict(d, f"{source}: known_answer #{i + 1}")
        for i, d in enumerate(data.get("known_answer", []))
    ]
    prompts = [str(p) for p in data.get("accuracy_prompts", [])]
    return answers, prompts


def builtin_suite() -> tuple[list[KnownAnswer], list[str]]:
    """The bundled known answers and accuracy prompts."""
    text = resources.files("bringup.checks").joinpath("suite.toml").read_text(encoding="utf-8")
    return _read_suite(text, "built-in suite")


def load_suite_file(path: str | Path) -> tuple[list[KnownAnswer], list[str]]:
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"checks.suite_file {p} does not exist; give the path of a TOML file.")
    return _read_suite(p.read_text(encoding="utf-8"), str(p))


def suite_for(spec: Spec) -> list[KnownAnswer]:
    """The known answers a trial runs: built-in (unless turned off), the file, the extras."""
    builtin, _ = builtin_suite()
    out = list(builtin) if spec.checks.known_answers else []
    if spec.checks.suite_file:
        out.extend(load_suite_file(spec.checks.suite_file)[0])
    out.extend(
        KnownAnswer.from_dict(d, f"checks.extra #{i + 1}") for i, d in enumerate(spec.checks.extra)
    )
    return out


def accuracy_prompts_for(spec: Spec, count: int | None = None) -> list[str]:
    """``count`` (else ``spec.checks.accuracy_prompts``) prompts: the suite file's first,
    then built-in ones; fewer where there are not that many."""
    prompts: list[str] = []
    if spec.checks.suite_file:
        prompts.extend(load_suite_file(spec.checks.suite_file)[1])
    prompts.extend(builtin_suite()[1])
    return prompts[: count if count is not None else spec.checks.accuracy_prompts]
