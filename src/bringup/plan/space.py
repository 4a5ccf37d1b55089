"""The searched space as planners see it: candidates, departures, maturity and memory order.

Every planner takes its configurations from :class:`SearchSpace`: the spec's grid and
``[[candidates]]`` less what ``[plan].exclude`` rules out (``excluded``, to report as pruned).

A configuration's *departures* are the flags where it differs from the reference; its
*risk* is how many there are, then how immature its values are (the spec's ``[plan].order``
lists each flag's values most mature first; without one, the ``[space]`` order is used).
Values compare by their text so a config read back from the store (JSON) still matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bringup.spec import Config, FlagValue, Spec


def same_value(a: Any, b: Any) -> bool:
    """Flag values are equal when their command-line text is equal (``8`` == ``"8"``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a).lower() == str(b).lower()
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return str(a) == str(b)


def changed_flags(flags: Mapping[str, Any], reference: Mapping[str, Any]) -> set[str]:
    """The flags set differently in ``flags`` and ``reference`` (either side, by
    :func:`same_value`); a flag only one side sets counts as changed."""
    return {
        k
        for k in set(flags) | set(reference)
        if k not in flags or k not in reference or not same_value(flags[k], reference[k])
    }


def contains(config: Mapping[str, Any], combo: Mapping[str, Any]) -> bool:
    """True when ``config`` sets every flag of ``combo`` to the same value."""
    return all(k in config and same_value(config[k], v) for k, v in combo.items())


def flags_key(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A hashable identity of a flag set (flag order does not matter, values compared as
    text); not the store's launch identity, :func:`bringup.store.launch_key`."""
    return tuple(
        sorted(
            (k, str(v).lower() if isinstance(v, bool) else _num_text(v)) for k, v in config.items()
        )
    )


def _num_text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


# KV-cache dtype flags (vLLM/SGLang --kv-cache-dtype, llama.cpp --cache-type-k/-v): their
# values are ordered by the bytes a cached element takes without a declared memory_order.
_KV_DTYPE_FLAG = re.compile(r"kv[-_]cache[-_]dtype|cache[-_]type[-_][kv]\b", re.IGNORECASE)
_KV_BYTES = (
    (re.compile(r"^(auto|bf16|bfloat16|fp16|f16|float16|half)$"), 2.0),
    (re.compile(r"^(f32|fp32|float32)$"), 4.0),
    (re.compile(r"fp8|int8|q8|e4m3|e5m2"), 1.0),
    (re.compile(r"fp4|nvfp4|int4|q4|q5"), 0.5),
)


def kv_bytes(value: Any) -> float | None:
    """Bytes per cached element of a KV-cache dtype value ("auto" is the model's 16-bit
    dtype); None for a value not known here."""
    text = str(value).strip().lower()
    for pattern, size in _KV_BYTES:
        if pattern.search(text):
            return size
    return None


def numeric(value: Any) -> float | None:
    """The value as a number when it is one (bools are not), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


@dataclass
class SearchSpace:
    """Candidates of a spec with the reference, maturity ranks and memory ordering."""

    spec: Spec
    reference: Config = field(init=False)
    candidates: list[Config] = field(init=False)
    excluded: list[Config] = field(init=False)
    _axes: dict[str, list[FlagValue]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.reference = self.spec.reference_config()
        self._axes = self.spec.axes()
        self.candidates = []
        self.excluded = []
        for config in self.spec.configs():
            if any(contains(config, ex) for ex in self.spec.plan.exclude):
                self.excluded.append(config)
            else:
                self.candidates.append(config)

    def departures(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {
            k: v
            for k, v in config.items()
            if k not in self.reference or not same_value(self.reference[k], v)
        }

    def maturity(self, flag: str, value: Any) -> int:
        """0 for the most mature value of a flag; larger is less proven."""
        order = self.spec.plan.order.get(flag) or self._axes.get(flag, [])
        for i, v in enumerate(order):
            if same_value(v, value):
                return i
        return len(order)

    def risk(self, config: Mapping[str, Any]) -> tuple[int, int]:
        dep = self.departures(config)
        return len(dep), sum(self.maturity(k, v) for k, v in dep.items())

    def by_risk(self, configs: Iterable[Config]) -> list[Config]:
        indexed = list(enumerate(configs))
        indexed.sort(key=lambda iv: (*self.risk(iv[1]), iv[0]))
        return [c for _, c in indexed]

    def hunger(self, flag: str, value: Any) -> float | None:
        """Position of a value on its flag's memory scale (None: not ordered).

        ``[plan].memory_order`` lists values least hungry first; otherwise a KV-cache dtype
        is ordered by the bytes an element takes (:func:`kv_bytes`) and numeric values are
        their own scale (a larger fraction, batch, context or slot count needs more).
        """
        declared = self.spec.plan.memory_order.get(flag)
        if declared:
            for i, v in enumerate(declared):
                if same_value(v, value):
                    return float(i)
            return None
        if _KV_DTYPE_FLAG.search(flag):
            return kv_bytes(value)
        return numeric(value)

    def values(self, flag: str) -> list[FlagValue]:
        return list(self._axes.get(flag, []))
