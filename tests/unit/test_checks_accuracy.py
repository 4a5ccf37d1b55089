"""Differential accuracy: agreement, logprob drift with CI, forcing, likelihood, storage."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from bringup.checks import (
    ReferenceAnswers,
    bootstrap_ci,
    collect_answers,
    compare_accuracy,
    force_tokens,
)
from bringup.http import Completion, OpenAIClient
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
accuracy_prompts = 3
accuracy_tokens = 4
{extra}
"""


def spec(extra: str = "") -> Spec:
    return parse_spec(SPEC.format(extra=extra))


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


TOKS = [
    [" the", " cat", " sat", " down"],
    [" a", " dog", " ran", " off"],
    [" it", " was", " a", " day"],
]
LPS = [[-0.1, -1.0, -0.5, -0.2], [-0.3, -2.0, -0.7, -0.1], [-0.2, -0.4, -0.1, -1.5]]


async def test_identical_answers_pass_with_zero_drift() -> None:
    ref = answers(list(zip(TOKS, LPS, strict=True)))
    rep = await compare_accuracy(ref, ref, spec())
    assert rep.passed and rep.token_agreement == 1.0 and rep.exact_match == 1.0
    assert rep.logprob_mad == 0.0 and rep.logprob_mad_ci == (0.0, 0.0)
    assert rep.first_divergence == [None, None, None]


async def test_forced_logprob_shift_is_regression_with_ci() -> None:
    ref = answers(list(zip(TOKS, LPS, strict=True)))
    shifted = [[x - 0.3 for x in row] for row in LPS]
    cand = answers(list(zip(TOKS, shifted, strict=True)), forced=shifted)
    rep = await compare_accuracy(ref, cand, spec())
    assert not rep.passed and rep.category is Category.ACCURACY_REGRESSION
    assert math.isclose(rep.logprob_mad, 0.3) and math.isclose(rep.logprob_diff, -0.3)
    lo, hi = rep.logprob_mad_ci
    assert lo <= rep.logprob_mad <= hi
    assert "logprob MAD" in rep.evidence[0]
    stored = json.loads(json.dumps(rep.to_dict()))
    assert stored["category"] == "accuracy_regression"
    loose = await compare_accuracy(ref, cand, spec("max_logprob_mad = 0.5"))
    assert loose.passed


async def test_divergence_position_and_agreement() -> None:
    ref = answers(list(zip(TOKS, LPS, strict=True)))
    toks = [list(t) for t in TOKS]
    toks[0][2] = " stood"
    cand = answers(list(zip(toks, LPS, strict=True)))
    rep = await compare_accuracy(ref, cand, spec("min_token_agreement = 0.9"))
    assert rep.first_divergence == [2, None, None]
    assert math.isclose(rep.token_agreement, (0.5 + 1 + 1) / 3)
    assert rep.category is Category.ACCURACY_REGRESSION and "token agreement" in rep.evidence[0]


async def test_tolerated_flag_drift_is_accepted() -> None:
    ref = answers(list(zip(TOKS, LPS, strict=True)))
    shifted = [[x - 0.3 for x in row] for row in LPS]
    cand = answers(list(zip(TOKS, shifted, strict=True)), forced=shifted)
    s = spec('tolerate = ["--cache-type-k"]')
    rep = await compare_accuracy(ref, cand, s, candidate_flags={"--cache-type-k": "q8_0"})
    assert rep.passed and rep.note and "--cache-type-k" in rep.note


async def test_garbage_candidate_is_garbage_not_regression() -> None:
    ref = answers(list(zip(TOKS, LPS, strict=True)))
    bang = [["!"] * 30, TOKS[1], TOKS[2]]
    cand = answers([(bang[0], [-0.01] * 30), (TOKS[1], LPS[1]), (TOKS[2], LPS[2])])
    rep = await compare_accuracy(ref, cand, spec())
    assert rep.category is Category.GARBAGE_OUTPUT and "repeated_token" in rep.evidence[0]
    assert bang[0] == cand.answers[0].tokens


def test_answers_roundtrip_json_with_minus_inf() -> None:
    ref = answers(list(zip(TOKS, LPS, strict=True)), forced=[[-math.inf, -0.1, -0.2, -0.3]] * 3)
    back = ReferenceAnswers.from_dict(json.loads(json.dumps(ref.to_dict())))
    assert back.answers[1].tokens == TOKS[1] and back.forced is not None
    assert math.isinf(back.forced[0][0]) and back.forced[0][1] == -0.1


def test_bootstrap_ci_brackets_mean_and_is_seeded() -> None:
    vals = [0.1, 0.2, 0.15, 0.4, 0.05, 0.3, 0.22, 0.18]
    lo, hi = bootstrap_ci(vals)
    mean = sum(vals) / len(vals)
    assert lo < mean < hi and hi - lo < 0.2
    assert bootstrap_ci(vals) == (lo, hi)


# A fake "alphabet model": after the last letter in the prompt its greedy next token is
# the following letter (logprob -0.1); the one after that is the runner-up (-2.5), '!' is
# the floor (-12).
def _next(letter: str, k: int) -> str:
    return " " + chr((ord(letter) - 97 + k) % 26 + 97)


@pytest.fixture
async def alphabet() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        last = body["prompt"].split()[-1][-1]
        content = []
        for _ in range(body["max_tokens"]):
            tok, alt = _next(last, 1), _next(last, 2)
            content.append(
                {
                    "token": tok,
                    "logprob": -0.1,
                    "top_logprobs": [
                        {"token": tok, "logprob": -0.1},
                        {"token": alt, "logprob": -2.5},
                        {"token": "!", "logprob": -12.0},
                    ],
                }
            )
            last = tok[-1]
        return web.json_response(
            {
                "choices": [
                    {
                        "text": "".join(c["token"] for c in content),
                        "logprobs": {"content": content},
                        "finish_reason": "length",
                    }
                ]
            }
        )

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", seen  # type: ignore[union-attr]
    await runner.cleanup()


async def test_force_tokens_resumes_after_divergence(alphabet: Any) -> None:
    url, seen = alphabet
    async with OpenAIClient(url) as c:
        lps = await force_tokens(c, "Q: a", [" b", " d", " e", " q"], top=3)
    # b greedy; d is runner-up after c; e greedy after d; q unknown -> floor of top-3
    assert lps == [-0.1, -2.5, -0.1, -12.0]
    # one request for the greedy run, one resumed after the divergence at " d"
    assert [s["prompt"] for s in seen] == ["Q: a", "Q: a b d"]


async def test_collect_and_compare_with_reference_scoring(alphabet: Any) -> None:
    url, _ = alphabet
    s = spec()
    async with OpenAIClient(url) as c:
        ref = await collect_answers(c, s)
        # the reference answers twice accuracy_prompts: the budget for measuring more
        assert len(ref.prompts) == 6 and all(len(a.tokens) == 4 for a in ref.answers)
        same = await collect_answers(c, s, reference=ref)
        assert same.forced is not None and same.forced[0] == [-0.1] * 4
        rep = await compare_accuracy(ref, same, s, c)
        assert rep.passed and rep.logprob_mad == 0.0
        junk = ReferenceAnswers(
            ref.prompts,
            4,
            [Completion(" q m", [" q", " m"], [-0.1, -0.1], [{}, {}]), *ref.answers[1:]],
        )
        rep = await compare_accuracy(ref, junk, s, c)
    # one unlikely answer of six: garbage, not yet proven to be the configuration's habit
    assert rep.category is Category.GARBAGE_OUTPUT
    assert rep.evidence[0].startswith("inconclusive: garbage on 1 of 6 prompts")
    assert "likelihood" in rep.evidence[1] and "-12.00" in rep.evidence[1]


def _shifted_by(shifts: list[float]) -> tuple[ReferenceAnswers, ReferenceAnswers]:
    """The reference and a candidate whose forced logprobs differ by ``shifts[i]`` on prompt i."""
    ref = answers(list(zip(TOKS, LPS, strict=True)))
    rows = [[x - s for x in row] for row, s in zip(LPS, shifts, strict=True)]
    return ref, answers(list(zip(TOKS, rows, strict=True)), forced=rows)


async def test_mad_interval_wholly_under_the_limit_passes() -> None:
    ref, cand = _shifted_by([0.02, 0.03, 0.04])
    rep = await compare_accuracy(ref, cand, spec())
    assert rep.logprob_mad_ci[1] <= 0.10
    assert rep.passed and rep.verdict == "pass" and rep.to_dict()["verdict"] == "pass"


async def test_mad_point_under_the_limit_but_interval_straddling_is_inconclusive() -> None:
    ref, cand = _shifted_by([0.04, 0.08, 0.15])  # mean 0.09 < 0.10, CI up to 0.15
    rep = await compare_accuracy(ref, cand, spec())
    lo, hi = rep.logprob_mad_ci
    assert rep.logprob_mad < 0.10 and lo < 0.10 < hi
    assert rep.verdict == "inconclusive" and not rep.passed
    assert rep.category is Category.ACCURACY_REGRESSION
    assert rep.evidence[0].startswith("inconclusive") and f"{lo:.4f}-{hi:.4f}" in rep.evidence[0]


async def test_mad_point_over_the_limit_but_interval_straddling_is_inconclusive() -> None:
    ref, cand = _shifted_by([0.06, 0.10, 0.17])  # mean 0.11 > 0.10, CI down to 0.06
    rep = await compare_accuracy(ref, cand, spec())
    assert rep.logprob_mad > 0.10 and rep.logprob_mad_ci[0] < 0.10
    assert rep.verdict == "inconclusive" and "straddles" in rep.evidence[0]


async def test_mad_interval_wholly_over_the_limit_fails() -> None:
    ref, cand = _shifted_by([0.25, 0.3, 0.35])
    rep = await compare_accuracy(ref, cand, spec())
    assert rep.logprob_mad_ci[0] > 0.10
    assert rep.verdict == "fail" and not rep.passed and "wholly" in rep.evidence[0]
