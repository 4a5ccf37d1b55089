"""OpenAIClient against a small in-process aiohttp server speaking both logprob shapes."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from bringup.http import OpenAIClient, RequestError, parse_completion, parse_logprobs

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def llama_shape(tokens: list[str], lps: list[float]) -> dict[str, Any]:
    return {
        "content": [
            {
                "id": i,
                "token": t,
                "logprob": lp,
                "bytes": list(t.encode()),
                "top_logprobs": [
                    {"id": i, "token": t, "logprob": lp},
                    {"id": 9, "token": "x", "logprob": -9.0},
                ],
            }
            for i, (t, lp) in enumerate(zip(tokens, lps, strict=True))
        ]
    }


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    state: dict[str, Any] = {"status": 200, "shape": "llama"}

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append({"body": body, "auth": request.headers.get("Authorization")})
        if state["status"] != 200:
            return web.json_response({"error": {"message": "boom"}}, status=state["status"])
        toks, lps = [" Paris", "."], [-0.1, -0.5]
        if state["shape"] == "llama":
            lp: Any = llama_shape(toks, lps)
        else:
            lp = {
                "tokens": toks,
                "token_logprobs": lps,
                "top_logprobs": [{" Paris": -0.1}, {".": -0.5}],
            }
        return web.json_response(
            {
                "choices": [
                    {"text": "".join(toks), "index": 0, "logprobs": lp, "finish_reason": "length"}
                ],
                "usage": {"completion_tokens": 2, "prompt_tokens": 5},
            }
        )

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "gemma", "object": "model"}]})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", seen, state
    await runner.cleanup()


async def test_complete_reads_llama_logprobs_and_sends_greedy_body(server: Any) -> None:
    url, seen, _ = server
    async with OpenAIClient(url + "/v1", api_key="sekrit") as c:
        out = await c.complete(
            "The capital of France is", max_tokens=2, logprobs=2, seed=1, stop=["\n"]
        )
    assert out.text == " Paris."
    assert out.tokens == [" Paris", "."]
    assert out.token_logprobs == [-0.1, -0.5]
    assert out.top_logprobs[0] == {" Paris": -0.1, "x": -9.0}
    assert out.finish_reason == "length" and out.completion_tokens == 2
    body = seen[0]["body"]
    assert body["temperature"] == 0.0 and body["logprobs"] == 2 and body["stop"] == ["\n"]
    assert "model" not in body
    assert seen[0]["auth"] == "Bearer sekrit"


async def test_complete_reads_openai_legacy_logprobs(server: Any) -> None:
    url, _, state = server
    state["shape"] = "openai"
    async with OpenAIClient(url) as c:
        out = await c.complete("x", max_tokens=2, logprobs=1)
    assert out.tokens == [" Paris", "."] and out.top_logprobs[1] == {".": -0.5}


async def test_http_error_raises_request_error_with_status(server: Any) -> None:
    url, _, state = server
    state["status"] = 500
    async with OpenAIClient(url) as c:
        with pytest.raises(RequestError) as info:
            await c.complete("x", max_tokens=1)
    assert info.value.status == 500 and "boom" in str(info.value)


async def test_health_models_and_missing_props(server: Any) -> None:
    url, _, _ = server
    async with OpenAIClient(url) as c:
        assert await c.health() == (200, b'{"status": "ok"}')
        assert await c.models() == ["gemma"]
        assert await c.props() is None


async def test_health_of_closed_port_is_status_zero() -> None:
    async with OpenAIClient("http://127.0.0.1:9", timeout_s=2) as c:
        status, body = await c.health()
    assert status == 0 and b"no response" in body


def test_parse_logprobs_null_becomes_minus_inf() -> None:
    toks, lps, _ = parse_logprobs(
        {"tokens": ["a"], "token_logprobs": [None], "top_logprobs": [None]}
    )
    assert toks == ["a"] and math.isinf(lps[0])


def test_parse_completion_without_choices_raises() -> None:
    with pytest.raises(RequestError):
        parse_completion({"choices": []})
