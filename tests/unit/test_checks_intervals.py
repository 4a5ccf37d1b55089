"""Three-way verdicts by interval for drift, agreement and garbage; measuring more."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bringup.checks import ReferenceAnswers, accuracy_budget, compare_accuracy
from bringup.checks.accuracy import reference_prompt_count
from bringup.checks.accuracy_budget import judge_accuracy
from bringup.checks.intervals import at_least, at_most, garbage_share, wilson, worst
from bringup.http import Completion
from bringup.spec import Spec, parse_spec
from bringup.verdict import Category

SPEC = """
[engine]
name = "llama.cpp"
[model]
path = "m.gguf"
[space]
"--cache-type-k" = ["f16", "q8_0"]
[checks]
accuracy_prompts = {n}
accuracy_tokens = 4
{extra}
"""
WORDS = [" the", " cat", " sat", " down", " a", " dog", " ran", " off", " it", " was"]


def spec(n: int = 4, extra: str = "") -> Spec:
    return parse_spec(SPEC.format(n=n, extra=extra))


def row(i: int) -> tuple[list[str], list[float]]:
    toks = [WORDS[(i + k) % len(WORDS)] for k in range(4)]
    return toks, [-0.1 - 0.05 * ((i + k) % 5) for k in range(4)]


def answers(
    rows: list[tuple[list[str], list[float]]], forced: list[list[float]] | None = None
) -> ReferenceAnswers:
    comps = [
        Completion(
            text="".join(t),
            tokens=t,
            token_logprobs=lp,
            top_logprobs=[{x: y} for x, y in zip(t, lp, strict=True)],
        )
        for t, lp in rows
    ]
    return ReferenceAnswers([f"p{i}" for i in range(len(rows))], 4, comps, forced)


def shifted(shifts: list[float]) -> tuple[ReferenceAnswers, ReferenceAnswers]:
    """The reference on len(shifts) prompts and a candidate drifting by shifts[i] on each."""
    rows = [row(i) for i in range(len(shifts))]
    cand = [[x - s for x in lp] for (_, lp), s in zip(rows, shifts, strict=True)]
    ref = answers(rows)
    return ref, answers([(t, lp) for (t, _), lp in zip(rows, cand, strict=True)], forced=cand)


def test_interval_verdicts() -> None:
    assert at_most((0.02, 0.08), 0.1) == "pass" and at_most((0.11, 0.2), 0.1) == "fail"
    assert at_most((0.05, 0.15), 0.1) == "inconclusive"
    assert at_least((0.5, 0.9), 0.35) == "pass" and at_least((0.1, 0.3), 0.35) == "fail"
    assert at_least((0.2, 0.5), 0.35) == "inconclusive"
    assert at_most((math.nan, math.nan), 0.1) == "pass"
    assert (
        worst("pass", "inconclusive") == "inconclusive" and worst("inconclusive", "fail") == "fail"
    )


def test_wilson_interval_and_garbage_share() -> None:
    lo, hi = wilson(1, 16)
    assert 0.010 < lo < 0.012 and 0.27 < hi < 0.29  # tabulated Wilson 95% for 1/16
    assert garbage_share(0, 3, 0.05) == "pass"
    assert garbage_share(1, 16, 0.05) == "inconclusive"
    assert garbage_share(3, 16, 0.05) == "fail"
    assert garbage_share(16, 16, 0.05) == "fail"


async def test_token_agreement_is_judged_by_its_interval() -> None:
    rows = [row(i) for i in range(8)]
    cand = [(list(t), lp) for t, lp in rows]
    for i in range(8):  # every answer diverges at its second token: agreement 0.25 each
        cand[i][0][1] = " zebra"
    rep = await compare_accuracy(answers(rows), answers(cand), spec(8))
    assert rep.verdicts["token_agreement"] == "fail" and rep.token_agreement_ci == (0.25, 0.25)
    assert rep.category is Category.ACCURACY_REGRESSION and "wholly" in rep.evidence[0]
    for i in range(4):  # half of them now agree fully: mean 0.625, CI straddles 0.7
        cand[i] = (list(rows[i][0]), rows[i][1])
    rep = await compare_accuracy(answers(rows), answers(cand), spec(8, "min_token_agreement = 0.7"))
    lo, hi = rep.token_agreement_ci
    assert lo < 0.7 < hi and rep.verdicts["token_agreement"] == "inconclusive"
    assert rep.inconclusive and not rep.passed
    assert "inconclusive: token agreement 0.625" in rep.evidence[0]


async def test_garbage_the_reference_also_writes_is_excused() -> None:
    loop = ["!"] * 30
    rows = [(loop, [-0.01] * 30)] + [row(i) for i in range(1, 4)]
    rep = await compare_accuracy(answers(rows), answers(rows), spec(4))
    assert rep.passed and rep.garbage_prompts == 0 and rep.verdicts["garbage"] == "pass"
    assert len(rep.excused) == 1 and "the reference's answer trips repeated_token" in rep.excused[0]


async def test_one_garbage_answer_in_sixteen_is_inconclusive_three_fail() -> None:
    rows = [row(i) for i in range(16)]
    bad = [(["!"] * 30, [-0.01] * 30)]
    rep = await compare_accuracy(answers(rows), answers(bad + rows[1:]), spec(16))
    assert rep.verdicts["garbage"] == "inconclusive" and rep.category is Category.GARBAGE_OUTPUT
    assert rep.evidence[0].startswith("inconclusive: garbage on 1 of 16 prompts")
    assert "repeated_token" in rep.evidence[1]
    rep = await compare_accuracy(answers(rows), answers(bad * 3 + rows[3:]), spec(16))
    assert rep.verdicts["garbage"] == "fail" and "repeated_token" in rep.evidence[0]


def test_the_reference_answers_the_budget() -> None:
    assert reference_prompt_count(spec(4)) == 8
    assert reference_prompt_count(spec(4, "accuracy_max_prompts = 20")) == 20
    assert reference_prompt_count(spec(4, "accuracy_max_prompts = 2")) == 4


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Stand in for the candidate server: answer the reference's prompts from ``cand``."""
    state: dict[str, Any] = {"cand": None, "calls": []}

    async def fake(client: Any, s: Spec, *, reference: ReferenceAnswers) -> ReferenceAnswers:
        full: ReferenceAnswers = state["cand"]
        start = full.prompts.index(reference.prompts[0])
        state["calls"].append((start, start + len(reference.prompts)))
        return full.part(start, start + len(reference.prompts))

    monkeypatch.setattr(accuracy_budget, "collect_answers", fake)
    return state


async def test_inconclusive_drift_asks_more_prompts_and_is_decided(asked: Any) -> None:
    # the first four straddle the 0.10 limit; four more steady ones bring the CI under it
    ref, cand = shifted([0.04, 0.08, 0.15, 0.09, 0.03, 0.04, 0.03, 0.05])
    asked["cand"] = cand
    rep, got = await judge_accuracy(None, ref, spec(4))  # type: ignore[arg-type]
    assert asked["calls"] == [(0, 4), (4, 8)]
    assert rep.passed and rep.verdict == "pass" and len(got.prompts) == 8
    assert rep.measured is not None and "4 prompt(s) added to the first 4" in rep.measured
    assert rep.measured.endswith("decided")


async def test_still_inconclusive_when_the_budget_is_spent_fails_saying_so(asked: Any) -> None:
    ref, cand = shifted([0.04, 0.08, 0.15, 0.09, 0.05, 0.16, 0.06, 0.14])
    asked["cand"] = cand
    rep, _ = await judge_accuracy(None, ref, spec(4))  # type: ignore[arg-type]
    assert asked["calls"] == [(0, 4), (4, 8)]
    assert not rep.passed and rep.category is Category.ACCURACY_REGRESSION
    assert rep.evidence[0].startswith("inconclusive")
    assert "still inconclusive: the reference's prompts are spent" in rep.evidence[-1]


async def test_a_clear_failure_is_not_measured_more(asked: Any) -> None:
    ref, cand = shifted([0.3, 0.35, 0.25, 0.3, 0.3, 0.3, 0.3, 0.3])
    asked["cand"] = cand
    rep, _ = await judge_accuracy(None, ref, spec(4))  # type: ignore[arg-type]
    assert asked["calls"] == [(0, 4)] and rep.verdict == "fail" and rep.measured is None


async def test_a_stored_reference_with_no_spare_prompts_says_how_to_get_more(asked: Any) -> None:
    ref, cand = shifted([0.04, 0.08, 0.15, 0.09])
    asked["cand"] = cand
    rep, _ = await judge_accuracy(None, ref, spec(4))  # type: ignore[arg-type]
    assert asked["calls"] == [(0, 4)] and not rep.passed
    assert rep.measured is not None and "accuracy_max_prompts" in rep.evidence[-1]


GARBAGE = (["!"] * 30, [-0.01] * 30)


async def test_garbage_no_clean_prompts_could_clear_is_not_measured_more(asked: Any) -> None:
    # one garbage answer in the first 4 of a budget of 8: Wilson(1, 8) reaches far past 0.05
    rows = [row(i) for i in range(8)]
    ref = answers(rows)
    asked["cand"] = answers([GARBAGE, *rows[1:]])
    rep, got = await judge_accuracy(None, ref, spec(4))  # type: ignore[arg-type]
    assert asked["calls"] == [(0, 4)] and len(got.prompts) == 4
    assert not rep.passed and rep.category is Category.GARBAGE_OUTPUT
    assert rep.evidence[0].startswith("inconclusive: garbage on 1 of 4 prompts")
    assert "repeated_token" in rep.evidence[1]
    assert rep.measured == rep.evidence[-1]
    assert rep.measured.startswith("not measured more: garbage on 1 of 4 prompts fails")
    assert "other 4 prompt(s)" in rep.measured and "with all 8 answered" in rep.measured


async def test_garbage_a_large_budget_could_clear_is_measured_more(asked: Any) -> None:
    # with 200 prompts to ask, one garbage answer among clean ones can pass the 0.05 limit
    rows = [row(i) for i in range(200)]
    ref = answers(rows)
    asked["cand"] = answers([GARBAGE, *rows[1:]])
    budget = spec(4, "accuracy_max_prompts = 200")
    rep, _ = await judge_accuracy(None, ref, budget)  # type: ignore[arg-type]
    assert asked["calls"][0] == (0, 4) and len(asked["calls"]) > 1
    assert rep.measured is not None and not rep.measured.startswith("not measured more")
