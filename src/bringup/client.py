"""A small async client for OpenAI-compatible completion servers.

``OpenAIClient`` speaks to llama-server, SGLang, vLLM and trtllm-serve alike: non-streaming
``POST /v1/completions`` (greedy by default, with top log-probabilities), ``GET /health``,
and what ``/v1/models`` and ``/props`` say about the served model. Both log-probability
shapes seen in the wild are read into one :class:`Completion`: the OpenAI legacy one
(``tokens``/``token_logprobs``/``top_logprobs``) and llama-server's per-token ``content``
list. An HTTP error or a malformed answer raises :class:`RequestError`; callers that judge
a trial turn it into a verdict. The API key is sent as a bearer token and never echoed.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import aiohttp

from bringup.errors import RequestError

__all__ = ["Completion", "OpenAIClient", "RequestError", "parse_completion", "parse_logprobs"]


@dataclass
class Completion:
    """One completion choice, with per-token log-probabilities when they were asked for."""

    text: str
    tokens: list[str] = field(default_factory=list)
    token_logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def completion_tokens(self) -> int:
        """Tokens generated, from usage when the server reports it, else the token list."""
        n = self.usage.get("completion_tokens")
        return int(n) if isinstance(n, int) else len(self.tokens)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "token_logprobs": self.token_logprobs,
            "top_logprobs": self.top_logprobs,
            "finish_reason": self.finish_reason,
            "usage": self.usage,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        return cls(
            text=str(d.get("text", "")),
            tokens=[str(t) for t in d.get("tokens", [])],
            token_logprobs=[float(x) for x in d.get("token_logprobs", [])],
            top_logprobs=[
                {str(k): float(v) for k, v in m.items()} for m in d.get("top_logprobs", [])
            ],
            finish_reason=d.get("finish_reason"),
            usage=dict(d.get("usage") or {}),
        )


def _num(x: Any) -> float:
    # JSON null appears for the first prompt token under echo; -inf keeps arithmetic honest.
    return float(x) if isinstance(x, int | float) else -math.inf


def parse_logprobs(lp: Any) -> tuple[list[str], list[float], list[dict[str, float]]]:
    """Tokens, their log-probabilities and the top alternatives, from either known shape."""
    if not isinstance(lp, dict):
        return [], [], []
    content = lp.get("content")
    if isinstance(content, list):  # llama-server (and chat-style) per-token records
        tokens, lps, tops = [], [], []
        for rec in content:
            if not isinstance(rec, dict):
                continue
            tokens.append(str(rec.get("token", "")))
            lps.append(_num(rec.get("logprob")))
            top: dict[str, float] = {}
            for alt in rec.get("top_logprobs") or []:
                if isinstance(alt, dict) and "token" in alt:
                    top.setdefault(str(alt["token"]), _num(alt.get("logprob")))
            tops.append(top)
        return tokens, lps, tops
    tokens = [str(t) for t in lp.get("tokens") or []]
    lps = [_num(x) for x in lp.get("token_logprobs") or []]
    tops = [
        {str(k): _num(v) for k, v in m.items()} if isinstance(m, dict) else {}
        for m in lp.get("top_logprobs") or []
    ]
    return tokens, lps, tops


def parse_completion(payload: Any, elapsed_s: float = 0.0) -> Completion:
    """The first choice of a ``/v1/completions`` response body."""
    if not isinstance(payload, dict):
        raise RequestError("completion response is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise RequestError(f"completion response has no choices: {str(payload)[:200]}")
    choice = choices[0]
    text = choice.get("text")
    if not isinstance(text, str):
        raise RequestError(f"completion choice has no text: {str(choice)[:200]}")
    tokens, lps, tops = parse_logprobs(choice.get("logprobs"))
    usage = payload.get("usage")
    return Completion(
        text=text,
        tokens=tokens,
        token_logprobs=lps,
        top_logprobs=tops,
        finish_reason=choice.get("finish_reason"),
        usage=usage if isinstance(usage, dict) else {},
        elapsed_s=elapsed_s,
    )


class OpenAIClient:
    """Async client for one server; use as ``async with OpenAIClient(url) as c: ...``."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout_s: float = 30) -> None:
        self.base_url = base_url.rstrip("/")
        if self.base_url.endswith("/v1"):
            self.base_url = self.base_url[: -len("/v1")]
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> OpenAIClient:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.timeout_s), headers=self._headers
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("use OpenAIClient as 'async with OpenAIClient(url) as client'")
        return self._session

    async def _request(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, bytes]:
        try:
            async with self._http().request(method, self.base_url + path, json=body) as resp:
                return resp.status, await resp.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            reason = (
                "timed out" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
            )
            raise RequestError(f"{method} {path}: no response ({reason})") from exc

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        """POST a JSON body and return the decoded answer; non-2xx raises RequestError."""
        status, raw = await self._request("POST", path, body)
        text = raw.decode("utf-8", "replace")
        if not 200 <= status < 300:
            raise RequestError(f"POST {path} answered {status}: {text[:300]}", status, text)
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise RequestError(f"POST {path} answered non-JSON: {text[:200]!r}", status) from exc

    async def get_json(self, path: str) -> Any | None:
        """GET a JSON document; None when the server has no such endpoint or it is not JSON."""
        try:
            status, raw = await self._request("GET", path)
        except RequestError:
            return None
        if status != 200:
            return None
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None

    async def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        logprobs: int | None = None,
        model: str | None = None,
        seed: int | None = None,
        stop: list[str] | None = None,
    ) -> Completion:
        """One non-streaming text completion (not chat)."""
        body: dict[str, Any] = {
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": False,
        }
        if logprobs is not None:
            body["logprobs"] = logprobs
        if model is not None:
            body["model"] = model
        if seed is not None:
            body["seed"] = seed
        if stop:
            body["stop"] = stop
        start = time.perf_counter()
        payload = await self.post_json("/v1/completions", body)
        return parse_completion(payload, time.perf_counter() - start)

    async def health(self, path: str = "/health") -> tuple[int, bytes]:
        """Status and body of the health endpoint; status 0 means no HTTP answer at all."""
        try:
            return await self._request("GET", path)
        except RequestError as exc:
            return 0, str(exc).encode()

    async def models(self) -> list[str]:
        """Model ids listed by ``/v1/models`` (empty when the endpoint is missing)."""
        doc = await self.get_json("/v1/models")
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list):
            return []
        return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]

    async def props(self) -> dict[str, Any] | None:
        """llama-server's ``/props`` (model path, slots, build); None on other engines."""
        doc = await self.get_json("/props")
        return doc if isinstance(doc, dict) else None
