"""Prompts of a set input length, built before the clock starts.

With a server tokenizer (llama-server and vLLM ``POST /tokenize`` / ``/detokenize``), a pool
of token ids is cut into windows of exactly ``input_tokens`` ids starting at different
offsets, each turned back into text; the server's ``usage.prompt_tokens`` then confirms the
length (engines add a BOS token of their own). Without one, prompts are built from common
short English words, about one token each. Every request gets a different prompt so a
prefix cache cannot turn the benchmark into a cache benchmark.

:func:`prepare` also finds the served model name when none was given and probes once whether
the server accepts the output-length options (``ignore_eos``, ``min_tokens``).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from bringup.bench.client import endpoint_path, request_body
from bringup.bench.config import BenchConfig
from bringup.http import OpenAIClient
from bringup.http.openai import json_or_none, model_ids

_WORD_TEXT = (
    "the of and to in is was that for on are with as his they be at one have this from "
    "or had by word but what some we can out other were all there when up use your how "
    "said an each she which do their time if will way about many then them write would "
    "like so these her long make thing see him two has look more day could go come did "
    "number sound no most people my over know water than call first who may down side "
    "been now find any new work part take get place made live where after back little "
    "only round man year came show every good me give our under name very through just "
    "form sentence great think say help low line differ turn cause much mean before move "
    "right boy old too same tell does set three want air well also play small end put home "
    "read hand port large spell add even land here must big high such follow act why ask "
    "men change went light kind off need house picture try us again animal point mother"
)
_WORDS = tuple(_WORD_TEXT.split())


@dataclass
class PreparedPrompts:
    prompts: list[str]
    tokenizer: bool  # built from the server's own tokenizer
    length_options: bool  # the server accepted ignore_eos / min_tokens
    model: str | None


def text_prompt(index: int, n_tokens: int, rng: random.Random) -> str:
    """About ``n_tokens`` tokens of words; the leading index keeps prompts distinct."""
    words = [f"{index}."] + [rng.choice(_WORDS) for _ in range(max(n_tokens - 2, 0))]
    return " ".join(words)


async def _post_json(
    client: OpenAIClient, path: str, body: dict[str, Any]
) -> dict[str, Any] | None:
    answer = await client.answer("POST", path, data=orjson.dumps(body))
    if answer.status != 200:
        return None
    data = json_or_none(answer.body)
    return data if isinstance(data, dict) else None


async def served_model(client: OpenAIClient) -> str | None:
    """The first model id of ``GET /v1/models``, or None."""
    answer = await client.answer("GET", "/v1/models")
    ids = model_ids(json_or_none(answer.body)) if answer.status == 200 else []
    return ids[0] if ids else None


async def _tokenize(client: OpenAIClient, text: str, model: str | None) -> list[int] | None:
    for body in ({"content": text, "add_special": False}, {"model": model, "prompt": text}):
        data = await _post_json(client, "/tokenize", body)
        tokens = data.get("tokens") if data else None
        if isinstance(tokens, list) and tokens and all(isinstance(t, int) for t in tokens):
            return tokens
    return None


async def _detokenize(client: OpenAIClient, tokens: list[int], model: str | None) -> str | None:
    data = await _post_json(client, "/detokenize", {"tokens": tokens, "model": model})
    if not data:
        return None
    text = data.get("content", data.get("prompt"))
    return text if isinstance(text, str) else None


async def _accepts_length_options(
    client: OpenAIClient, cfg: BenchConfig, model: str | None, prompt: str
) -> bool:
    """One tiny request with ``ignore_eos``/``min_tokens``; False if the server rejects it."""
    probe = BenchConfig(concurrency=[1], output_tokens=2, endpoint=cfg.endpoint, model=model)
    body = request_body(probe, prompt, length_options=True)
    answer = await client.answer("POST", endpoint_path(cfg), data=body)
    # unreachable (status 0): the benchmark will record the errors itself
    return answer.status not in (400, 422)


async def prepare(
    session: aiohttp.ClientSession, base_url: str, cfg: BenchConfig, count: int
) -> PreparedPrompts:
    """``count`` distinct prompts of ``cfg.input_tokens`` tokens, plus server facts."""
    client = OpenAIClient.sharing(session, base_url)
    rng = random.Random(cfg.seed)
    model = cfg.model or await served_model(client)
    n = cfg.input_tokens
    seed_words = max(2 * n, 1024)
    seed_text = " ".join(rng.choice(_WORDS) for _ in range(seed_words))
    pool = await _tokenize(client, seed_text, model)
    prompts: list[str] = []
    if pool:
        while len(pool) < 2 * n:
            pool = pool + pool
        span = len(pool) - n
        sem = asyncio.Semaphore(8)

        async def window(i: int) -> str | None:
            start = (i * 7919) % max(span, 1)  # a prime stride spreads the offsets
            async with sem:
                return await _detokenize(client, pool[start : start + n], model)

        texts = await asyncio.gather(*(window(i) for i in range(count)))
        if all(texts):
            prompts = [t for t in texts if t]
    tokenizer = bool(prompts)
    if not prompts:
        prompts = [text_prompt(i, n, rng) for i in range(count)]
    length_ok = cfg.ignore_eos and await _accepts_length_options(
        client, cfg, model, prompts[0][:200]
    )
    return PreparedPrompts(prompts, tokenizer, length_ok, model)
