"""The one OpenAI-compatible client: completions, health, model list, info endpoints.

``OpenAIClient`` speaks to llama-server, SGLang, vLLM and trtllm-serve alike: non-streaming
``POST /v1/completions`` (greedy by default, with top log-probabilities), the same request
streamed and read whole (for checks that compare the two paths, not for timing), the health
endpoint, and what ``/v1/models`` and ``/props`` say about the served model. Readiness,
the port inspection, the probe, the checks and the benchmark's preparation all use it; the
measured stream transport (:mod:`bringup.bench.stream_http`) is the one exception. An HTTP
error or a malformed answer raises :class:`RequestError`, :meth:`OpenAIClient.answer`
never raises for the transport; callers that judge a trial turn either into a verdict. The
API key is sent as a bearer token and never echoed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import aiohttp

from bringup.errors import RequestError
from bringup.http.completions import Completion, parse_completion
from bringup.http.session import TRANSPORT_ERRORS, no_response, open_session, why_no_response
from bringup.http.urls import root_url, server_root


@dataclass
class Answer:
    """What a server said to one request; ``status`` 0 when it said nothing (``why``)."""

    status: int
    body: bytes = b""
    why: str = ""


class OpenAIClient:
    """Async client for one server; use as ``async with OpenAIClient(url) as c: ...``."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 30,
        *,
        connect_timeout_s: float | None = None,
    ) -> None:
        self.base_url = server_root(base_url)
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._connect_timeout_s = connect_timeout_s
        self._session: aiohttp.ClientSession | None = None
        self._owned = True

    @property
    def api_key(self) -> str | None:
        """The key sent with every request (never logged): for a stream read by another
        client of the same server (the benchmark's streaming client, see checks.stream_text)."""
        return self._api_key

    @classmethod
    def sharing(cls, session: aiohttp.ClientSession, base_url: str) -> OpenAIClient:
        """A client over a session its owner opened and closes (the benchmark's pool, with
        its headers and timeouts)."""
        client = cls(base_url)
        client._session, client._owned = session, False
        return client

    async def __aenter__(self) -> OpenAIClient:
        if self._session is None:
            self._session = open_session(
                timeout_s=self.timeout_s,
                api_key=self._api_key,
                connect_timeout_s=self._connect_timeout_s,
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
        if self._session is not None and self._owned:
            await self._session.close()
        self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("use OpenAIClient as 'async with OpenAIClient(url) as client'")
        return self._session

    async def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> tuple[int, bytes]:
        url = root_url(self.base_url, path)
        session = self._http()
        timeout = aiohttp.ClientTimeout(total=timeout_s) if timeout_s else session.timeout
        try:
            async with session.request(
                method, url, json=body, headers=headers, timeout=timeout
            ) as r:
                return r.status, await r.read()
        except TRANSPORT_ERRORS as exc:
            raise no_response(method, path, exc) from exc

    async def answer(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> Answer:
        """Whatever the server answers, HTTP errors included; never raises for the transport.
        ``data`` sends a body already encoded (with the session's content type);
        ``timeout_s`` bounds this request instead of the session's timeout."""
        url = root_url(self.base_url, path)
        # aiohttp reads timeout=None as "no timeout at all": the session's unless given
        session = self._http()
        timeout = aiohttp.ClientTimeout(total=timeout_s) if timeout_s else session.timeout
        try:
            async with session.request(
                method, url, json=body, data=data, headers=headers, timeout=timeout
            ) as r:
                return Answer(r.status, await r.read())
        except TRANSPORT_ERRORS as exc:
            return Answer(0, b"", why_no_response(exc))

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
        return json_or_none(raw) if status == 200 else None

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
        body = completion_body(
            prompt, max_tokens, temperature, logprobs=logprobs, model=model, seed=seed, stop=stop
        )
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
        return model_ids(await self.get_json("/v1/models"))

    async def props(self) -> dict[str, Any] | None:
        """llama-server's ``/props`` (model path, slots, build); None on other engines."""
        doc = await self.get_json("/props")
        return doc if isinstance(doc, dict) else None


def completion_body(
    prompt: str,
    max_tokens: int,
    temperature: float,
    *,
    logprobs: int | None = None,
    model: str | None = None,
    seed: int | None = None,
    stop: list[str] | None = None,
) -> dict[str, Any]:
    """The ``/v1/completions`` request body (non-streaming; optional fields only when set)."""
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
    return body


def json_or_none(raw: bytes) -> Any | None:
    """The decoded JSON document, or None when the body is not JSON."""
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def model_ids(doc: Any) -> list[str]:
    """The model ids of a ``/v1/models`` document (empty when it is not one)."""
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return []
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
