"""Probe any running OpenAI-compatible server: health, one known answer, garbage.

``run_probe(url)`` is what ``bringup probe`` and deployment readiness probes call: it reads
the health endpoint, asks one short known-answer completion at temperature 0 and runs the
garbage detectors on the answer, all within one overall timeout. The result carries a
one-line verdict; ``passed`` is true only when every step passed. The API key is used for
the request and never appears in the result.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from bringup.checks.garbage import detect_garbage, quote
from bringup.checks.known_answers import KnownAnswer, builtin_suite
from bringup.http import OpenAIClient, RequestError

PROBE_ANSWER = "eiffel-paris"  # two tokens, and right on any language model worth serving


@dataclass
class ProbeResult:
    url: str
    passed: bool
    verdict: str  # one line, e.g. "ok: health 200, 'Paris' in 0.08s"
    health_status: int | None = None
    prompt: str | None = None
    output: str | None = None
    expectation: str | None = None
    detector: str | None = None
    elapsed_s: float = 0.0
    steps: dict[str, bool] = field(default_factory=dict)
    hang_s: float | None = None  # /health said 200, then no answer came for this long

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def probe_answer() -> KnownAnswer:
    answers, _ = builtin_suite()
    return next((a for a in answers if a.name == PROBE_ANSWER), answers[0])


async def _probe(
    client: OpenAIClient, res: ProbeResult, health_path: str, model: str | None
) -> None:
    status, body = await client.health(health_path)
    res.health_status = status
    res.steps["health"] = status == 200
    if status != 200:
        shown = body.decode("utf-8", "replace").strip()[:120]
        res.verdict = f"fail: health {health_path} answered {status or 'nothing'} {shown}".rstrip()
        return
    ka = probe_answer()
    res.prompt, res.expectation = ka.prompt, ka.expectation()
    try:
        c = await client.complete(
            ka.prompt, max_tokens=ka.max_tokens, temperature=0.0, logprobs=1, model=model
        )
    except RequestError as exc:
        res.steps["answer"] = False
        res.verdict = f"fail: completion request failed: {exc}"
        return
    res.output = c.text
    finding = detect_garbage(c.text, c.tokens or None)
    res.steps["garbage"] = finding is None
    if finding is not None:
        res.detector = finding.detector
        res.verdict = f"fail: garbage output ({finding.evidence()})"
        return
    res.steps["answer"] = ka.judge(c.text)
    if not res.steps["answer"]:
        res.verdict = (
            f"fail: wrong answer {quote(c.text)} to {ka.prompt!r}, expected {ka.expectation()}"
        )
        return
    res.passed = True
    res.verdict = f"ok: health 200, {quote(c.text.strip())} to {ka.prompt!r}"


async def run_probe(
    url: str,
    *,
    timeout_s: float = 10.0,
    api_key: str | None = None,
    health_path: str = "/health",
    model: str | None = None,
) -> ProbeResult:
    """Health, one known answer and the garbage detectors, within ``timeout_s`` overall."""
    res = ProbeResult(url=url, passed=False, verdict="fail: not run")
    start = time.perf_counter()
    try:
        # the overall wait below decides a timeout, so that a silent server reads as a hang
        async with OpenAIClient(url, api_key=api_key, timeout_s=timeout_s + 5) as client:
            await asyncio.wait_for(_probe(client, res, health_path, model), timeout_s)
    except TimeoutError:
        res.passed = False
        res.verdict = f"fail: no verdict within {timeout_s:g}s"
        if res.health_status == 200:
            res.hang_s = round(time.perf_counter() - start, 3)
            res.verdict = f"hang: /health 200 but no token for {res.hang_s:.1f}s"
    res.elapsed_s = round(time.perf_counter() - start, 3)
    if res.passed:
        res.verdict += f" in {res.elapsed_s:.2f}s"
    return res
