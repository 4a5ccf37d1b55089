"""Sentinels: natural prompts answered beside the load, judged against their idle answers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bringup.bench import BenchConfig, run_benchmark
from bringup.checks import check_under_load
from bringup.verdict import Category


def _app(under_load_garbage: bool) -> web.Application:
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
        text = " Paris, the capital of France."
        if under_load_garbage and state["streams"] > 0:
            text = "!!!!!!!!!!!!!!!!!!!!!!!!"
        return web.json_response({"choices": [{"text": text, "index": 0}]})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    return app


@pytest.mark.parametrize("garbage", [False, True])
async def test_sentinels_judged_against_idle(garbage: bool) -> None:
    server = TestServer(_app(garbage), host="127.0.0.1")
    await server.start_server()
    try:
        cfg = BenchConfig(
            concurrency=[2],
            input_tokens=8,
            output_tokens=200,
            requests=4,
            warmup=0,
            sentinels=("The Eiffel Tower is in",),
            model="m",
        )
        report = await run_benchmark(str(server.make_url("/")).rstrip("/"), cfg)
    finally:
        await server.close()
    level = report.levels[0]
    assert level.idle_answers == [" Paris, the capital of France."]
    assert level.sentinel_prompts == ["The Eiffel Tower is in"]
    verdict = check_under_load(report.levels)
    if garbage:
        assert level.samples == ["!!!!!!!!!!!!!!!!!!!!!!!!"]
        assert not verdict.passed and verdict.category is Category.GARBAGE_OUTPUT
        assert "concurrency 2" in verdict.evidence[0]
    else:
        assert verdict.passed, verdict.evidence


@dataclass
class _Level:
    value: float
    samples: list[str]
    errors: dict[str, int] = field(default_factory=dict)
    idle_answers: list[str | None] = field(default_factory=list)


def test_garbage_already_at_idle_is_not_blamed_on_load() -> None:
    loop = " the the the the the the the the the the the the the the the the"
    assert not check_under_load([_Level(4, [loop])]).passed
    assert check_under_load([_Level(4, [loop], idle_answers=[loop])]).passed
