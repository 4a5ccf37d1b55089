"""Pruning rules learned from verdicts.

A failed trial becomes at most one :class:`PruneRule`; a rule says which other
configurations cannot do better and why. The flags a failure names are, first, those its
deciding diagnosis rule implicates (``Failure.flags``, every spelling the rule declares)
that the configuration sets; only when it implicates none of them, those found in the
evidence text: every flag and every (distinctive) value of the configuration it names,
departures from the reference or not (case-insensitive, whole words). Two or more named:
the culprit is that combination ("backend FLASH_ATTN ... kv_cache_dtype not supported" is
the pair, not the KV dtype alone); when none of them departs from the reference, the
departures join it, since the reference's own values work without them. One named
departure: that value alone. Nothing named: the configuration's departures. A line that
only echoes the engine's own arguments (SGLang's ``server_args=ServerArgs(...)``, vLLM's
``non-default args: {...}`` and ``with config:``, an argparse ``Namespace(...)``) names
every flag the trial set, so it is never evidence against any of them: such lines are
left out before the evidence is read.

- ``unsupported_hardware`` / ``missing_dependency``: every configuration with the culprit
  value(s).
- ``invalid_config``: every configuration with the named flags' values (when only one flag
  or value is named, together with the departures).
- ``oom_gpu``: every configuration at least as memory-hungry: the culprit axes at or above
  the failed value, the other memory-ordered axes not lower. An OOM only under load (at
  the benchmark stage, after one request at a time was served) holds for its whole
  context: every axis is a culprit, so the axes without a memory order keep the values it
  failed with (each backend sizes its KV cache and workspace for a full batch its own
  way) and only the memory-ordered ones widen, toward more memory.
- ``accuracy_regression``: the culprit value(s), unless the flag is in ``[checks].tolerate``.
- ``garbage_output``, ``wrong_answer``, ``runtime_crash``, ``startup_timeout_or_hang``,
  ``model_incompatible``: the culprit value(s).

Context: where a failure of ``accuracy_regression`` or of the categories just above
(``model_incompatible`` apart: the model cannot run with the value whatever else is set)
names nothing (no diagnosis rule implicates a flag, the evidence names no flag or value), its
cause may be any value *together with* the others present (fp8 KV drifting with one
attention backend only), so the rule prunes the configuration's whole context: every
other flag at the value it had. A second failure of the same category in a different
context widens it (:func:`widen`) to what the two contexts share, down to the value alone
once they share nothing else; the same failure, that is: two failures that different
diagnosis rules explain have different causes and never widen each other. Causes known to
be context-free prune widely at once: a value the hardware cannot run or whose dependency
is missing, a pair the engine refuses by name, a flag a diagnosis rule implicates.

Only deterministic causes prune: a transient failure (``Failure.transient``: a request
timed out or its connection dropped while the engine lived, ``slow_response`` and
``stalled``) says something about the moment, not the configuration, and prunes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bringup.plan.space import SearchSpace, contains, same_value
from bringup.verdict import Category, Stage, TrialResult

VALUE_CATEGORIES = {Category.UNSUPPORTED_HARDWARE, Category.MISSING_DEPENDENCY}
PINNED_CATEGORIES = {
    Category.GARBAGE_OUTPUT,
    Category.WRONG_ANSWER,
    Category.RUNTIME_CRASH,
    Category.STARTUP_TIMEOUT_OR_HANG,
    Category.MODEL_INCOMPATIBLE,
}
# Failures of the environment, not of the configuration: they prune nothing.
NEUTRAL_CATEGORIES = {
    Category.PORT_IN_USE,
    Category.OOM_HOST,
    Category.DISTRIBUTED_FAILURE,
    Category.MODEL_LOAD_FAILURE,
    Category.ERRORS_UNDER_LOAD,
}
TRANSIENT_CATEGORIES = {Category.SLOW_RESPONSE, Category.STALLED}


@dataclass
class PruneRule:
    """Configurations matching ``combo`` (or, for OOM, dominating it) are pruned."""

    combo: dict[str, Any]
    by_trial: str | None
    reason: str
    memory: dict[str, Any] = field(default_factory=dict)  # oom: the failed config, whole
    culprits: tuple[str, ...] = ()
    # a failure that named nothing: its combo is the whole context it failed in
    category: Category | None = None
    contextual: bool = False
    cause: str | None = None  # the diagnosis rule that decided the failure, where one did

    def matches(self, config: Mapping[str, Any], space: SearchSpace) -> bool:
        if not self.memory:
            return contains(config, self.combo)
        for flag, failed in self.memory.items():
            if flag not in config:
                return False
            h_failed, h_x = space.hunger(flag, failed), space.hunger(flag, config[flag])
            if h_failed is not None and h_x is not None:
                if h_x < h_failed:
                    return False
            elif flag in self.culprits and not same_value(config[flag], failed):
                return False
        return True


# Lines that echo the engine's arguments: they name every flag set, whatever failed.
_ARGS_ECHO = re.compile(
    r"server_args=ServerArgs\(|\bServerArgs\(|non-default args:|\bNamespace\(|"
    r"\b(?:Engine|LLM|TorchLlm|Llm)Args\(|\bwith config: |\bengine_args=|"
    r"^\s*(?:args|arguments|command line|cmdline)\s*[:=]",
    re.IGNORECASE,
)


def is_args_echo(line: str) -> bool:
    """Whether ``line`` only echoes the engine's own arguments (see the module docstring)."""
    return _ARGS_ECHO.search(line) is not None


def _flag_words(flag: str) -> list[str]:
    bare = flag.lstrip("-")
    return [flag, bare, bare.replace("-", "_")]


def _mentions(text: str, word: str) -> bool:
    if not word:
        return False
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE) is not None


def named_flags(evidence: str, config: Mapping[str, Any]) -> list[str]:
    """Flags of the configuration whose name appears in the evidence (``--a-b`` or ``a_b``)."""
    return [f for f in config if any(_mentions(evidence, w) for w in _flag_words(f) if len(w) > 2)]


def named_values(evidence: str, config: Mapping[str, Any]) -> list[str]:
    """Flags whose (distinctive, non-numeric) value in ``config`` appears in the evidence."""
    out = []
    for flag, value in config.items():
        text = str(value)
        if isinstance(value, bool) or len(text) < 3 or re.fullmatch(r"[-+0-9.eE]+", text):
            continue
        if text.lower() in {"auto", "none", "off", "true", "false", "default"}:
            continue
        if _mentions(evidence, text):
            out.append(flag)
    return out


def implicated_flags(implicated: list[str], config: Mapping[str, Any]) -> list[str]:
    """Flags of the configuration the deciding rule implicates (any of its spellings)."""
    declared = set(implicated)
    return [f for f in config if f in declared or f.split("=", 1)[0] in declared]


def _culprits(named: list[str], dep: list[str]) -> list[str]:
    """The flags a failure is blamed on, from those its evidence names (see the docstring)."""
    if not named:
        return dep
    if any(f in dep for f in named):
        return named
    # Only the reference's own values named: they fail together with what departs from it.
    return list(dict.fromkeys(named + dep))


def rule_from(
    result: TrialResult, config: Mapping[str, Any], space: SearchSpace, tolerate: list[str]
) -> PruneRule | None:
    """The pruning rule a failed trial teaches, or None when it teaches nothing safe."""
    failure = result.failure
    if failure is None:
        return None
    cat = failure.category
    if failure.transient or cat in NEUTRAL_CATEGORIES or cat in TRANSIENT_CATEGORIES:
        return None
    lines = [*failure.evidence, failure.detail or ""]
    evidence = "\n".join(line for line in lines if not is_args_echo(line))
    dep = space.departures(config)
    named = implicated_flags(failure.flags, config) or list(
        dict.fromkeys(named_values(evidence, config) + named_flags(evidence, config))
    )
    culprits = _culprits(named, list(dep))
    short = failure.headline()[:160]
    # a model that cannot run with a value cannot run with it whatever else is set
    contextual = PINNED_CATEGORIES - {Category.MODEL_INCOMPATIBLE} | {Category.ACCURACY_REGRESSION}
    unexplained = not named and cat in contextual

    def combo_of(flags: list[str]) -> dict[str, Any]:
        return {f: config[f] for f in flags}

    if cat is Category.OOM_GPU:
        under_load = failure.stage is Stage.BENCHMARKED
        axes = list(config) if under_load or not culprits else culprits
        return PruneRule(
            combo=combo_of(axes),
            by_trial=result.trial_id,
            reason=f"at least as memory-hungry as a config that ran out of GPU memory ({short})",
            memory=dict(config),
            culprits=tuple(axes),
        )
    if cat in VALUE_CATEGORIES:
        if not culprits:
            return None
        what = ", ".join(f"{f}={config[f]}" for f in culprits)
        return PruneRule(combo_of(culprits), result.trial_id, f"{what}: {short}")
    if cat is Category.INVALID_CONFIG:
        # Two or more flags or values named: the refusal is about them. One: it may be the
        # flag left at its reference value that the departures needed changed.
        flags = culprits if len(named) >= 2 else list(dict.fromkeys(named + list(dep)))
        if not flags:
            return None
        what = " with ".join(f"{f}={config[f]}" for f in flags)
        return PruneRule(combo_of(flags), result.trial_id, f"{what} rejected: {short}")
    if cat is Category.ACCURACY_REGRESSION:
        blamed = [f for f in culprits if f not in tolerate]
        if not blamed or len(blamed) < len(culprits):
            return None  # a tolerated flag may be the one drifting
        what = ", ".join(f"{f}={config[f]}" for f in blamed)
        if unexplained:
            return _in_context(config, blamed, result.trial_id, f"{what} drifts", cat, None)
        return PruneRule(combo_of(blamed), result.trial_id, f"{what} drifts from the reference")
    if cat in PINNED_CATEGORIES:
        if not culprits:
            return None
        what = ", ".join(f"{f}={config[f]}" for f in culprits)
        if unexplained:
            return _in_context(
                config, culprits, result.trial_id, f"{what}: {short}", cat, failure.rule
            )
        return PruneRule(combo_of(culprits), result.trial_id, f"{what}: {short}")
    return None


def _in_context(
    config: Mapping[str, Any],
    culprits: list[str],
    trial: str | None,
    what: str,
    cat: Category,
    cause: str | None,
) -> PruneRule:
    return PruneRule(
        dict(config),
        trial,
        f"{what} (with the other values it failed with)",
        culprits=tuple(culprits),
        category=cat,
        contextual=True,
        cause=cause,
    )


def widen(rule: PruneRule, earlier: list[PruneRule], space: SearchSpace) -> PruneRule | None:
    """A wider rule from ``rule`` and an earlier contextual one of the same failure: what
    their two contexts share, when that still departs from the reference; else None.

    The same failure is the same category decided by the same diagnosis rule: two crashes
    that two different rules explain are two causes, and what their contexts happen to
    share is not the culprit of either."""
    if not rule.contextual:
        return None
    best: dict[str, Any] | None = None
    for old in earlier:
        if not old.contextual or old.category is not rule.category or old.combo == rule.combo:
            continue
        if old.cause != rule.cause:
            continue
        shared = {
            k: v for k, v in rule.combo.items() if k in old.combo and same_value(old.combo[k], v)
        }
        if not space.departures(shared) or len(shared) == len(rule.combo):
            continue
        if best is None or len(shared) < len(best):
            best = shared
    if best is None:
        return None
    what = ", ".join(f"{f}={v}" for f, v in best.items())
    return PruneRule(
        best,
        rule.by_trial,
        f"{what}: failed ({rule.category.value if rule.category else 'failure'}) in two "
        "contexts that share only this",
        culprits=tuple(best),
        category=rule.category,
        contextual=True,
        cause=rule.cause,
    )
