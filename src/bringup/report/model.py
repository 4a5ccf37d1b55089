"""What a report shows, read from the store once: :class:`RunReport`.

``load_report(store, ref)`` gathers one run (the latest when ``ref`` is None): its trials,
the searched axes, verdict counts, the winner, passing configurations ranked by the
objective, failures grouped by category, pruned configurations and the fingerprint.
Secrets are masked here, before any renderer sees the data: command lines, environment
and every evidence line pass through :mod:`bringup.secrets`.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bringup.errors import BringupError
from bringup.report.outcome import reference_sentence
from bringup.secrets import (
    MASK,
    is_secret_name,
    redact_argv,
    redact_env,
    redact_text,
    secret_values,
)
from bringup.store import Store, TrialRow
from bringup.verdict import Status, failure_headline

# typed columns no secret can hide in (the command line is redacted on its own)
_NOT_TEXT = ("status", "stage", "category", "command")
LEVEL_KEY = re.compile(r"^c(\d+)\.(.+)$")
KEY_FIGURES = (
    ("output_tok_s", "out tok/s"),
    ("decode_tok_s_single", "decode tok/s (1 req)"),
    ("ttft_p50_ms", "TTFT p50 ms"),
    ("ttft_p99_ms", "TTFT p99 ms"),
    ("itl_p50_ms", "ITL p50 ms"),
    ("e2e_p99_ms", "E2E p99 ms"),
)
LATENCY_KEYS = (
    "ttft_p50_ms",
    "ttft_p99_ms",
    "itl_p50_ms",
    "tpot_p50_ms",
    "e2e_p50_ms",
    "e2e_p99_ms",
)


@dataclass
class RunReport:
    run: dict[str, Any]
    trials: list[TrialRow]
    axes: dict[str, list[Any]]  # the searched flags and their values, in spec order
    objective: str
    larger_is_better: bool
    winner: TrialRow | None
    pruned: list[dict[str, Any]]
    fingerprint: dict[str, Any]
    counts: dict[str, int] = field(default_factory=dict)
    reference_failed: str | None = None  # the sentence said first, when the reference failed

    @property
    def run_id(self) -> str:
        return str(self.run["id"])

    @property
    def engine_version(self) -> str:
        for t in self.trials:
            if t.engine_version:
                return t.engine_version
        return str(self.fingerprint.get("engine_version") or "unknown")

    def passed(self) -> list[TrialRow]:
        """Passed trials, best first by the objective (those without the figure last)."""
        sign = 1.0 if self.larger_is_better else -1.0

        def rank(t: TrialRow) -> tuple[int, float]:
            v = t.metrics.get(self.objective)
            return (0, -sign * float(v)) if isinstance(v, int | float) else (1, 0.0)

        return sorted((t for t in self.trials if t.passed), key=rank)

    def failures(self) -> dict[str, list[TrialRow]]:
        """Failed trials by category, the most frequent category first."""
        groups: dict[str, list[TrialRow]] = {}
        for t in self.trials:
            if t.status is Status.FAILED:
                groups.setdefault(t.category.value if t.category else "unknown", []).append(t)
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def label(self, flags: dict[str, Any]) -> str:
        """The searched flags of a configuration, ``--flash-attn=on --parallel=4``."""
        shown = [f"{k}={flags[k]}" for k in self.axes if k in flags]
        return " ".join(shown) or " ".join(f"{k}={v}" for k, v in flags.items()) or "(defaults)"


def levels(trial: TrialRow) -> dict[int, dict[str, float]]:
    """Per-concurrency figures of a trial: ``{4: {"output_tok_s": ..., ...}}``."""
    out: dict[int, dict[str, float]] = {}
    for key, value in trial.metrics.items():
        m = LEVEL_KEY.match(key)
        if m and isinstance(value, int | float):
            out.setdefault(int(m.group(1)), {})[m.group(2)] = float(value)
    return dict(sorted(out.items()))


def _objective(spec: dict[str, Any]) -> tuple[str, bool]:
    obj = spec.get("objective") or {}
    if obj.get("minimize"):
        return str(obj["minimize"]), False
    return str(obj.get("maximize") or "output_tok_s"), True


def _scrub(value: Any, secrets: list[str]) -> Any:
    """Mask secret values anywhere inside stored JSON (outputs, evidence, errors)."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    return value


def _redacted_trial(trial: TrialRow, secrets: list[str]) -> TrialRow:
    command = [str(w) for w in trial.command]
    secrets = secrets + secret_values(command, {})
    scrubbed = {
        f.name: _scrub(getattr(trial, f.name), secrets)
        for f in dataclasses.fields(trial)
        if f.name not in _NOT_TEXT
    }
    return dataclasses.replace(trial, command=redact_argv(command), **scrubbed)


def _reference_failed(spec: dict[str, Any], trials: list[TrialRow]) -> str | None:
    """As the sweep said it: the stored spec's reference and the trials' verdicts."""
    if not (spec.get("checks") or {}).get("accuracy", True):
        return None
    space = spec.get("space")
    axes = space.items() if isinstance(space, dict) else ()
    ref = {str(k): v[0] for k, v in axes if isinstance(v, list) and v}
    ref.update(spec.get("reference") or {})
    rows = [(t.flags, t.passed, _headline(t)) for t in trials]
    return reference_sentence(rows, ref)


def _headline(t: TrialRow) -> str:
    if t.category is None:
        return t.status.value
    return failure_headline(t.category, t.evidence, t.detail)


def load_report(store: Store, ref: str | None = None) -> RunReport:
    run = store.run(ref)
    if run is None:
        if ref:
            raise BringupError(
                f"no run matches {ref!r} in {store.path}; `bringup report` shows the latest."
            )
        raise BringupError(
            f"the results database {store.path} has no runs yet; run `bringup sweep` first."
        )
    spec = run.get("spec") or {}
    env = dict((spec.get("engine") or {}).get("env") or {}) | dict(
        (spec.get("launch") or {}).get("env") or {}
    )
    launch_args = [str(a) for a in (spec.get("launch") or {}).get("args") or []]
    secrets = secret_values(launch_args, env)
    space = spec.get("space")
    space = space if isinstance(space, dict) else {}
    for flag, values in list(space.items()):
        if is_secret_name(str(flag)):  # runs stored before the spec masked them
            secrets += [str(v) for v in values if not isinstance(v, bool) and v != MASK]
            space[flag] = [MASK] * len(values)
    for section in ("engine", "launch"):
        part = spec.get(section)
        if isinstance(part, dict) and isinstance(part.get("env"), dict):
            part["env"] = redact_env(part["env"])
    if isinstance(spec.get("launch"), dict):
        spec["launch"]["args"] = redact_argv(launch_args)
    trials = [_redacted_trial(t, secrets) for t in store.trials(run["id"])]
    objective, larger = _objective(spec)
    by_id = {t.id: t for t in trials}
    counts = Counter(t.status.value for t in trials)
    if run.get("pruned"):
        counts["pruned"] = len(run["pruned"])
    return RunReport(
        run=_scrub(run, secrets),
        trials=trials,
        axes=_axes(spec),
        objective=objective,
        larger_is_better=larger,
        winner=by_id.get(run.get("winner_trial") or ""),
        pruned=list(run.get("pruned") or []),
        fingerprint=dict(run.get("fingerprint") or {}),
        counts=dict(counts),
        reference_failed=_reference_failed(spec, trials),
    )


def _axes(spec: dict[str, Any]) -> dict[str, list[Any]]:
    """The searched flags of a stored spec: its axes, then its candidate sets' values."""
    axes = {str(k): list(v) for k, v in (spec.get("space") or {}).items()}
    for flags in spec.get("candidates") or []:
        for flag, value in (flags or {}).items():
            values = axes.setdefault(str(flag), [])
            if value not in values:
                values.append(value)
    return axes
