"""Probe any running OpenAI-compatible server: health, one known answer, garbage.

``run_probe(url)`` is what ``bringup probe`` and deployment readiness probes call: it reads
the health endpoint, asks one short known-answer completion at temperature 0 and runs the
garbage detectors on the answer, all within one overall timeout. The result carries a
one-line verdict; ``passed`` is true only when every step passed. The API key is used for
the request and never appears in the result.

Slow is not a hang. When ``/health`` said 200 and the answer did not come within the
timeout, the server's own process decides, with the evidence the benchmark's stall watchdog
uses (:mod:`bringup.server.progress`): the process listening on a loopback URL's port
(``listener_pid``), its process tree's CPU time sampled through the wait
(``ProgressMeter``). Working over the last seconds of the wait is ``slow`` (``slow_s``),
idle is a ``hang`` (``hang_s``). A server whose process cannot be seen (another host, or
served by this very process) has only its silence to judge it by: a hang, as before.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from bringup.checks.garbage import detect_garbage, quote
from bringup.checks.known_answers import KnownAnswer, builtin_suite
from bringup.http import OpenAIClient, RequestError
from bringup.server.progress import SAMPLE_WINDOW_S, ProgressMeter, judge_silence, listener_pid
from bringup.verdict import Category

# the exit status of a probe (or watch) that ended slow: distinct from a hang or a wrong answer
# (1), since the server works, only slowly
SLOW_EXIT = 4
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
    slow_s: float | None = None  # ... while the server's process kept computing
    engine_pid: int | None = None  # the process found listening on the URL's port
    progress: str | None = None  # what that process did at the end of the wait

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Engine:
    """The server's process, once ``/health`` answered: sampled while the answer is awaited."""

    meter: ProgressMeter | None = None

    async def watch(self, url: str, res: ProbeResult) -> None:
        res.engine_pid = await asyncio.to_thread(listener_pid, url)
        if res.engine_pid is not None:
            self.meter = ProgressMeter(res.engine_pid, None).start()

    async def judge(self, res: ProbeResult, waited_s: float) -> None:
        """``slow``/``hang`` verdict of a probe whose answer did not come in ``waited_s``."""
        await self.close()
        progress = None
        if self.meter is not None:
            progress = await asyncio.to_thread(self.meter.over, SAMPLE_WINDOW_S)
            res.progress = (
                f"the server (pid {res.engine_pid}) used {progress.cpu_s:.2f} CPU-s "
                f"over the last {progress.window_s:.1f} s"
            )
        # the one verdict for a silence (the benchmark's and the correct stage's): the
        # meter looked while the request was still open
        working = progress is not None and progress.progressing
        category, _, _ = judge_silence(working=working, watched=True)
        if category is Category.SLOW_RESPONSE:
            res.slow_s = waited_s
            res.verdict = (
                f"slow: /health 200 and the server is working ({res.progress}), "
                f"but no answer came within {waited_s:.1f}s"
            )
            return
        res.hang_s = waited_s
        res.verdict = f"hang: /health 200 but no token for {waited_s:.1f}s"
        if res.progress is not None:
            res.verdict += f" ({res.progress})"

    async def close(self) -> None:
        if self.meter is not None:
            await self.meter.stop()


def probe_answer() -> KnownAnswer:
    answers, _ = builtin_suite()
    return next((a for a in answers if a.name == PROBE_ANSWER), answers[0])


async def _probe(
    client: OpenAIClient, res: ProbeResult, health_path: str, model: str | None, engine: _Engine
) -> None:
    status, body = await client.health(health_path)
    res.health_status = status
    res.steps["health"] = status == 200
    if status != 200:
        shown = body.decode("utf-8", "replace").strip()[:120]
        res.verdict = f"fail: health {health_path} answered {status or 'nothing'} {shown}".rstrip()
        return
    await engine.watch(client.base_url, res)
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
    engine = _Engine()
    start = time.perf_counter()
    try:
        # the overall wait below decides a timeout, so that a silent server reads as a hang
        async with OpenAIClient(url, api_key=api_key, timeout_s=timeout_s + 5) as client:
            await asyncio.wait_for(_probe(client, res, health_path, model, engine), timeout_s)
    except TimeoutError:
        res.passed = False
        res.verdict = f"fail: no verdict within {timeout_s:g}s"
        if res.health_status == 200:
            await engine.judge(res, round(time.perf_counter() - start, 3))
    finally:
        await engine.close()
    res.elapsed_s = round(time.perf_counter() - start, 3)
    if res.passed:
        res.verdict += f" in {res.elapsed_s:.2f}s"
    return res
