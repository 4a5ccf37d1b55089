"""Greedy answers under load must agree with idle answers and stay right where known."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.test_utils import TestServer

from bringup.bench import BenchConfig, run_benchmark
from bringup.checks import check_under_load
from bringup.checks.known_answers import KnownAnswer
from bringup.checks.load_answers import agrees, judge_sentinels
from bringup.verdict import Category

ADD = KnownAnswer("add", "2 + 2 =", "numeric", 4.0, max_tokens=2)
EIFFEL = "The Eiffel Tower is located in the city of"


@dataclass
class _Level:
    value: float
    samples: list[str]
    sentinel_prompts: list[str]
    sentinel_answers: list[str | None]
    idle_answers: list[str | None]
    errors: dict[str, int] = field(default_factory=dict)


def test_agreement_allows_only_a_late_divergence() -> None:
    assert agrees(" Paris, France.", " Paris, France.")
    assert agrees(" Paris, the capital of France", " Paris, the capital city")
    assert not agrees(" Paris, the capital of France", " Sept}Alerti aferOutputStream")
    assert not agrees(" 4\n\n2 + 3 = 5", " 4 →従って、")
    assert not agrees(" 4", "")


def test_hot_answers_under_load_fail_with_prompt_and_both_answers() -> None:
    level = _Level(
        4,
        ["x"],
        [EIFFEL, "2 + 2 ="],
        [" Sept}Alerti aferOutputStream glared", " uttered the national asset"],
        [" Paris, the capital of France", " 4\n\n2 + 3 = 5"],
    )
    report = check_under_load([level], known=[ADD])
    assert not report.passed
    # the known answer that went wrong decides; its evidence names prompt and both answers
    assert report.category is Category.WRONG_ANSWER
    assert "2 + 2 =" in report.evidence[0] and "uttered" in report.evidence[0]
    assert "concurrency 4" in report.evidence[0]
    report = check_under_load([level])  # without known answers: the idle comparison
    assert report.category is Category.ACCURACY_REGRESSION
    assert "Sept}Alerti" in report.evidence[0] and "Paris, the capital" in report.evidence[0]


def test_same_answers_under_load_pass() -> None:
    idle = [" Paris, the capital of France", " 4\n\n2 + 3 = 5"]
    level = _Level(4, ["x"], [EIFFEL, "2 + 2 ="], list(idle), idle)
    assert check_under_load([level], known=[ADD]).passed
    # a failed sentinel request is no answer to judge (the level's errors count it)
    assert not judge_sentinels("4", [EIFFEL], [None], idle, {})


def _app() -> web.Application:
    """Greedy at idle; samples hot (another answer) while a stream is in flight."""
    state = {"streams": 0}

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if body.get("stream"):
            state["streams"] += 1
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for _ in range(body["max_tokens"]):
                await asyncio.sleep(0.005)
                await resp.write(b'data: {"choices":[{"text":" tok","index":0}]}\n\n')
            await resp.write(
                b'data: {"choices":[{"text":"","index":0,"finish_reason":"length"}],'
                b'"usage":{"completion_tokens":%d,"prompt_tokens":4}}\n\n' % body["max_tokens"]
            )
            await resp.write(b"data: [DONE]\n\n")
            state["streams"] -= 1
            return resp
        text = " 4\n\n3 + 3 = 6" if state["streams"] == 0 else " 4 →従って、"
        return web.json_response({"choices": [{"text": text, "index": 0}]})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    return app


async def test_non_greedy_under_load_fails_the_benchmark_check() -> None:
    server = TestServer(_app(), host="127.0.0.1")
    await server.start_server()
    try:
        cfg = BenchConfig(
            concurrency=[2], input_tokens=8, output_tokens=200, requests=4, warmup=0,
            sentinels=("2 + 2 =",), model="m",
        )  # fmt: skip
        report = await run_benchmark(str(server.make_url("/")).rstrip("/"), cfg)
    finally:
        await server.close()
    verdict = check_under_load(report.levels, known=[ADD])
    # the known answer is still right (4), but the greedy answer changed
    assert verdict.category is Category.ACCURACY_REGRESSION, verdict
    assert "2 + 2 =" in verdict.evidence[0] and "従って" in verdict.evidence[0]
