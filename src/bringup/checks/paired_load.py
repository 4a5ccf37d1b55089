"""Accuracy under load, paired: the candidate against the reference, both under one load.

The idle ``accurate`` stage compares answers with the server alone. Load changes what an
engine computes (which sequences share a batch, chunked prefill beside other prompts), so
with ``[checks] paired_load`` on, the same accuracy prompts are asked again while
``streams - 1`` other greedy requests keep the server busy (``streams``: the benchmark's
top concurrency):

- the **reference** answers under that load once; its answers are kept beside its idle
  ones (``ReferenceAnswers.meta["under_load"]``);
- a **candidate** answers under the same load and force-scores the reference's under-load
  tokens; the comparison is item by item against the reference *under load*, so the drift
  the load causes on every engine (batched arithmetic is not bit-identical) cancels;
- a **control** (a trial that differs from the reference only in ``[checks] controls``,
  i.e. a second launch of the reference) is compared the same way; its under-load MAD is
  the noise floor of that condition (``meta["load_floor"]``, set by the sweep).

Thresholds come from that floor: a candidate fails when its under-load MAD interval lies
above the idle limit plus the floor's upper bound (or its token agreement falls under the
idle limit scaled by the control's own agreement). Without a control there is no floor and
nothing is judged: the figures are recorded with a sentence saying so, never a verdict
drawn from a threshold nobody measured.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bringup.checks.accuracy import (
    AccuracyReport,
    _thresholds,
    collect_answers,
    compare_accuracy,
    reference_prompt_count,
)
from bringup.checks.known_answers import accuracy_prompts_for
from bringup.checks.reference import ReferenceAnswers
from bringup.http import OpenAIClient, RequestError
from bringup.plan.space import changed_flags
from bringup.spec import Config, Spec
from bringup.verdict import Category


@dataclass
class PairedLoadReport:
    streams: int
    passed: bool
    judged: bool  # False: no control arm measured the floor yet
    category: Category | None = None
    evidence: list[str] = field(default_factory=list)
    comparison: dict[str, Any] = field(default_factory=dict)  # AccuracyReport.to_dict()
    floor: dict[str, Any] | None = None
    limits: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "streams": self.streams,
            "passed": self.passed,
            "judged": self.judged,
            "category": self.category.value if self.category else None,
            "evidence": self.evidence,
            "comparison": self.comparison,
            "floor": self.floor,
            "limits": self.limits,
        }


@contextlib.asynccontextmanager
async def background_load(
    client: OpenAIClient, prompts: Sequence[str], streams: int, max_tokens: int
) -> AsyncIterator[list[int]]:
    """``streams`` greedy requests kept in flight until the block ends; yields a counter of
    finished requests (errors are counted by the measured checks, not here).

    The fillers stop on a flag as well as by cancellation: aiohttp turns a cancel that
    meets its own request timeout into a ``TimeoutError`` (a ``RequestError`` here, which a
    filler shrugs off), and a filler that missed its cancel looped for good, holding a real
    llama-server sweep in its accurate stage for minutes with nothing measured."""
    done = [0]
    stop = asyncio.Event()

    async def one(k: int) -> None:
        i = k
        while not stop.is_set():
            with contextlib.suppress(RequestError):
                await client.complete(prompts[i % len(prompts)], max_tokens=max_tokens)
            done[0] += 1
            i += streams

    tasks = [asyncio.create_task(one(k)) for k in range(max(0, streams))]
    try:
        await asyncio.sleep(0.2)  # let them reach the server before the measured prompts
        yield done
    finally:
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def load_streams(spec: Spec) -> int:
    """The benchmark's top concurrency: the load the paired comparison runs under."""
    return max(spec.bench.concurrency or [1])


async def answers_under_load(
    client: OpenAIClient, spec: Spec, reference: ReferenceAnswers | None = None
) -> ReferenceAnswers:
    """The accuracy prompts answered beside ``load_streams - 1`` other requests.

    The reference and a candidate are under one load: the same measured prompts (those the
    reference answers, ``reference_prompt_count``), and the same fillers beside them."""
    streams = load_streams(spec)
    measured = (
        reference.prompts if reference else accuracy_prompts_for(spec, reference_prompt_count(spec))
    )
    # the other streams ask the same prompts in another order: natural text, other lengths
    fillers = list(reversed(measured))
    async with background_load(client, fillers, streams - 1, spec.checks.accuracy_tokens) as n:
        answers = await collect_answers(client, spec, reference=reference)
    answers.meta = {"streams": streams, "load_requests": n[0], "load_prompts": len(fillers)}
    return answers


def is_control(flags: Config, reference: Config, controls: Sequence[str]) -> bool:
    """A relaunch of the reference: it differs from it only in flags listed as controls."""
    changed = changed_flags(flags, reference)
    return bool(changed) and changed <= set(controls)


def floor_from(checks: dict[str, Any], trial_id: str) -> dict[str, Any] | None:
    """The noise floor a control's ``accuracy_under_load`` check measured (None if none)."""
    paired = checks.get("accuracy_under_load") or {}
    comparison = paired.get("comparison") or {}
    ci = comparison.get("logprob_mad_ci")
    if not ci or comparison.get("logprob_mad") is None:
        return None
    return {
        "trial": trial_id,
        "mad": float(comparison["logprob_mad"]),
        "mad_hi": float(ci[1]),
        "agreement": float(comparison.get("token_agreement") or 0.0),
    }


def note_control(
    reference: ReferenceAnswers | None,
    flags: Config,
    reference_flags: Config,
    controls: Sequence[str],
    checks: dict[str, Any],
    trial_id: str,
) -> bool:
    """Keep a finished control's floor in ``reference.meta["load_floor"]``; True if kept."""
    if reference is None or not is_control(flags, reference_flags, controls):
        return False
    floor = floor_from(checks, trial_id)
    if floor is None:
        return False
    reference.meta["load_floor"] = floor
    return True


def limits_from(spec: Spec, floor: dict[str, Any]) -> dict[str, float]:
    idle = _thresholds(spec)
    agreement = float(floor.get("agreement") or 1.0)
    return {
        "max_logprob_mad": round(idle["max_logprob_mad"] + float(floor["mad_hi"]), 6),
        "min_token_agreement": round(idle["min_token_agreement"] * min(1.0, agreement), 6),
    }


async def judge_under_load(
    reference_load: ReferenceAnswers,
    candidate_load: ReferenceAnswers,
    spec: Spec,
    floor: dict[str, Any] | None,
    *,
    candidate_flags: Config | None = None,
) -> tuple[PairedLoadReport, AccuracyReport]:
    """Candidate vs reference, both under load, judged against the control's floor."""
    streams = int(reference_load.meta.get("streams") or load_streams(spec))
    limits = limits_from(spec, floor) if floor else _thresholds(spec)
    acc = await compare_accuracy(
        reference_load, candidate_load, spec, candidate_flags=candidate_flags, limits=limits
    )
    at = f"under load ({streams} streams)"
    out = PairedLoadReport(streams, True, floor is not None, comparison=acc.to_dict(), floor=floor)
    out.limits = limits
    if floor is None:
        out.evidence = [
            f"{at}: {acc.summary()} against the reference under the same load; not judged: "
            "no control arm measured the noise floor (sweep a relaunch of the reference "
            "through [checks] controls)"
        ]
        return out, acc
    floor_line = (
        f"noise floor from control {floor.get('trial')}: MAD {float(floor['mad']):.4f} "
        f"(upper {float(floor['mad_hi']):.4f}), agreement {float(floor['agreement']):.3f}"
    )
    if not acc.passed:
        out.passed = False
        out.category = acc.category or Category.ACCURACY_REGRESSION
        out.evidence = [f"{at}: {line}" for line in acc.evidence] + [floor_line]
    else:
        out.evidence = [f"{at}: {acc.summary()}; {floor_line}"]
    return out, acc
