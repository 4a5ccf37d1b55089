"""Natural prompts answered while the load runs: is the output still right under load?

Benchmark prompts are cut from the tokenizer to exact lengths, and a small base model
continues such text with junk of its own, so their outputs say nothing about correctness.
Sentinels are natural prompts sent greedily, one at a time, beside the measured load at
every level (and once at idle before it). Their outputs are the level's ``samples``; the
under-load check compares each level with the idle answers, so only trouble that load
brought is blamed on load. Sentinel requests are not part of any figure.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp

from bringup.bench.client import endpoint_path
from bringup.bench.config import BenchConfig
from bringup.http import OpenAIClient
from bringup.http.openai import json_or_none
from bringup.http.session import STALE

RAMP_S = 0.3

DEFAULT_SENTINELS = (
    "The Eiffel Tower is located in the city of",
    "Photosynthesis is the process by which plants",
    "Once upon a time, in a small village by the sea,",
    "The three primary colors are",
)


async def _answer(
    client: OpenAIClient, cfg: BenchConfig, prompt: str, timeout_s: float | None = None
) -> str | None:
    body: dict[str, Any] = {"max_tokens": cfg.sentinel_tokens, "temperature": 0.0}
    if cfg.model:
        body["model"] = cfg.model
    if cfg.endpoint == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    # llama-server closes a kept-alive connection after a stream without saying so; a
    # request that meets such a connection is sent once more on a fresh one
    for _ in range(2):
        answer = await client.answer(
            "POST",
            endpoint_path(cfg),
            body,
            headers={"Accept": "application/json"},
            timeout_s=timeout_s or cfg.timeout_s,
        )
        if answer.why != STALE:
            break
    if answer.status != 200:
        return None
    data = json_or_none(answer.body)
    if not isinstance(data, dict):
        return None
    choice = (data.get("choices") or [{}])[0]
    text = choice.get("text")
    if text is None:
        text = (choice.get("message") or {}).get("content")
    return text if isinstance(text, str) else None


async def answer_all(
    session: aiohttp.ClientSession, base_url: str, cfg: BenchConfig
) -> list[str | None]:
    """Every sentinel once, one after another (None where a request failed)."""
    client = OpenAIClient.sharing(session, base_url)
    return [await _answer(client, cfg, p) for p in cfg.sentinels]


class SentinelsUnderLoad:
    """Sends the sentinels in a loop while a level's window runs; keeps the first answers."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, cfg: BenchConfig):
        self.client, self.cfg = OpenAIClient.sharing(session, base_url), cfg
        self.answers: list[str | None] = []
        self.timeout_s = cfg.timeout_s  # per sentinel; the runner bounds it by the watchdog
        self._task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        # let the window's requests reach the server first, so the sentinels meet the load
        await asyncio.sleep(RAMP_S)
        for prompt in self.cfg.sentinels:
            answer = await _answer(self.client, self.cfg, prompt, self.timeout_s)
            self.answers.append(answer)

    def start(self) -> None:
        if self.cfg.sentinels:
            self._task = asyncio.create_task(self._loop())

    async def stop(self, grace_s: float = 30.0) -> list[str | None]:
        """Let the round in flight finish (bounded), then return what was answered."""
        if self._task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._task), grace_s)
            if not self._task.done():
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
        return self.answers
