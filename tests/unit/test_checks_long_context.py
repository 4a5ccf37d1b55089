"""The long-context probe: a fact deep in a slot-filling prompt must come back."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bringup.checks.long_context import build_prompt, long_context_check
from bringup.http import OpenAIClient
from bringup.verdict import Category

Serve = Callable[[web.Application], Awaitable[str]]


def _app(n_ctx: int, keep_words: int | None, slots: int = 4) -> web.Application:
    """One word = one token; answers the code the prompt holds, if it still holds it."""

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"tokens": list(range(len(body["content"].split())))})

    async def props(request: web.Request) -> web.Response:
        return web.json_response(
            {"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": slots}
        )

    async def complete(request: web.Request) -> web.Response:
        prompt = (await request.json())["prompt"]
        words = prompt.split()
        if len(words) > n_ctx:
            return web.json_response({"error": {"message": "exceeds context"}}, status=400)
        if keep_words is not None:  # the fault: long prompts lose their beginning
            prompt = " ".join(words[-keep_words:])
        m = re.search(r"secret code of the [a-z ]+ is (\d+)\.", prompt)
        text = f" {m.group(1)}. The end" if m else " 12345. The end"
        return web.json_response({"choices": [{"text": text, "finish_reason": "length"}]})

    app = web.Application()
    app.router.add_post("/tokenize", tokenize)
    app.router.add_get("/props", props)
    app.router.add_post("/v1/completions", complete)
    return app


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[TestServer] = []

    async def start(app: web.Application) -> str:
        srv = TestServer(app, host="127.0.0.1")
        await srv.start_server()
        servers.append(srv)
        return str(srv.make_url("/")).rstrip("/")

    yield start
    for srv in servers:
        await srv.close()


def test_fact_is_deep_and_the_prompt_ends_on_its_lead() -> None:
    prompt, code = build_prompt(7, 200)
    assert prompt.index(code) < len(prompt) * 0.2
    assert prompt.endswith("is") and prompt.count(code) == 1


async def test_healthy_server_retrieves_at_the_slot_context(serve: Serve) -> None:
    url = await serve(_app(n_ctx=600, keep_words=None))
    async with OpenAIClient(url) as client:
        report = await long_context_check(client, stated=None, cap=4096, streams=4)
    assert report.passed, report.evidence
    assert report.context_tokens == 600 and "600" in report.source
    assert [it.arm for it in report.items] == ["idle"] + ["concurrent"] * 4
    # filled: every prompt within the slot and most of it
    assert all(540 <= it.prompt_tokens <= 600 for it in report.items), report.items


async def test_truncating_server_fails_naming_the_length(serve: Serve) -> None:
    url = await serve(_app(n_ctx=600, keep_words=300))
    async with OpenAIClient(url) as client:
        report = await long_context_check(client, stated=None, cap=4096, streams=1)
    assert not report.passed and report.category is Category.ACCURACY_REGRESSION
    assert "at 600 tokens" in report.evidence[0] and "not retrieved" in report.evidence[0]


async def test_stated_context_beyond_the_slot_is_caught(serve: Serve) -> None:
    url = await serve(_app(n_ctx=512, keep_words=None))
    async with OpenAIClient(url) as client:
        report = await long_context_check(client, stated=2048, cap=4096, streams=4)
    assert not report.passed
    assert "at 2048 tokens (checks.context_tokens)" in report.evidence[0]
    assert "each slot only 512 tokens" in report.evidence[0]


async def test_no_known_context_skips_with_a_reason(serve: Serve) -> None:
    app = web.Application()
    url = await serve(app)
    async with OpenAIClient(url) as client:
        report = await long_context_check(client, stated=None, cap=4096, streams=1)
    assert report.passed and report.skipped and "checks.context_tokens" in report.skipped
