"""The ``correct`` stage and the under-load re-check.

``run_correctness(client, spec)`` asks every known answer greedily, plus a few longer free
generations for the garbage detectors, then streams those free generations, whose text
must be the non-streamed text (:mod:`bringup.checks.stream_text`). It returns a
:class:`CheckReport`: each result with prompt, output, expectation and pass/fail;
``passed``; a ``category`` (``garbage_output`` before ``wrong_answer``, since garbage
explains wrong answers; a streamed text that is not the non-streamed one is
``wrong_answer``; ``runtime_crash`` when the server stopped answering) and evidence lines
that quote the output and name the detector. ``check_under_load(levels)`` runs the
detectors over the benchmark's sampled outputs per concurrency level (against their idle
answers when known) and names the level where garbage or request errors began. Results
are data; nothing here raises for a bad server.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from bringup.bench.stall import WATCHDOG_ERRORS
from bringup.checks.garbage import GarbageFinding, detect_first_token_stops, detect_garbage, quote
from bringup.checks.known_answers import KnownAnswer, accuracy_prompts_for, suite_for
from bringup.checks.load_answers import judge_sentinels
from bringup.checks.stream_text import Asked, Engine, StreamOutcome, check_streams
from bringup.http import OpenAIClient, RequestError
from bringup.server.progress import judge_silence, request_failure_kind
from bringup.spec import Spec
from bringup.verdict import Category

FREE_TEXT_PROMPTS = 1  # longer generations that give the detectors something to read
FREE_TEXT_TOKENS = 32


@dataclass
class CheckResult:
    """One prompt's outcome: what was asked, what came back, what was expected."""

    name: str
    prompt: str
    output: str
    expectation: str | None
    passed: bool
    detector: str | None = None  # the garbage detector that fired, if any
    error: str | None = None  # the request failed: the server's answer or the exception
    error_kind: str | None = None  # server.progress.request_failure_kind of that failure
    completion_tokens: int = 0
    finish_reason: str | None = None
    elapsed_s: float = 0.0


@dataclass
class CheckReport:
    passed: bool
    category: Category | None = None
    evidence: list[str] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)
    transient: bool = False  # says something about the moment, not the configuration

    @property
    def failure_kind(self) -> str:
        """The first failed request's kind (``other`` when no request failed)."""
        return next((r.error_kind for r in self.results if r.error_kind), "other")

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "category": self.category.value if self.category else None,
            "evidence": list(self.evidence),
            "results": [asdict(r) for r in self.results],
            "transient": self.transient,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckReport:
        cat = d.get("category")
        return cls(
            passed=bool(d["passed"]),
            category=Category(cat) if cat else None,
            evidence=list(d.get("evidence", [])),
            results=[CheckResult(**r) for r in d.get("results", [])],
            transient=bool(d.get("transient", False)),
        )


async def _ask(
    client: OpenAIClient, name: str, prompt: str, max_tokens: int, ka: KnownAnswer | None
) -> tuple[CheckResult, GarbageFinding | None]:
    stop = list(ka.stop) if ka else None
    try:
        c = await client.complete(
            prompt, max_tokens=max_tokens, temperature=0.0, logprobs=1, stop=stop
        )
    except RequestError as exc:
        res = CheckResult(
            name,
            prompt,
            "",
            ka.expectation() if ka else None,
            False,
            error=str(exc),
            error_kind=request_failure_kind(exc),
        )
        return res, None
    finding = detect_garbage(c.text, c.tokens or None)
    ok = finding is None and (ka is None or ka.judge(c.text))
    res = CheckResult(
        name=name,
        prompt=prompt,
        output=c.text,
        expectation=ka.expectation() if ka else None,
        passed=ok,
        detector=finding.detector if finding else None,
        completion_tokens=c.completion_tokens,
        finish_reason=c.finish_reason,
        elapsed_s=round(c.elapsed_s, 4),
    )
    return res, finding


async def run_correctness(
    client: OpenAIClient, spec: Spec, engine: Engine | None = None
) -> CheckReport:
    """Known answers and garbage detectors at temperature 0 against a running server;
    ``engine`` (its process and log, where known) is the streamed check's stall evidence."""
    results: list[CheckResult] = []
    garbage: list[str] = []
    for ka in suite_for(spec):
        res, finding = await _ask(client, ka.name, ka.prompt, ka.max_tokens, ka)
        results.append(res)
        if finding:
            garbage.append(f"{ka.name}: {finding.evidence()}")
    free: list[CheckResult] = []
    for i, prompt in enumerate(accuracy_prompts_for(spec)[:FREE_TEXT_PROMPTS]):
        res, finding = await _ask(client, f"free-text-{i + 1}", prompt, FREE_TEXT_TOKENS, None)
        results.append(res)
        free.append(res)
        if finding:
            garbage.append(f"{res.name}: {finding.evidence()}")
    report = judge_results(results, garbage)
    if not report.passed:
        return report
    # the longest answers give a streaming path the most events to get wrong
    asked = [Asked(r.name, r.prompt, r.output, FREE_TEXT_TOKENS, r.elapsed_s) for r in free]
    return judge_streams(report, await check_streams(client, asked, engine))


def judge_streams(report: CheckReport, outcomes: Sequence[StreamOutcome]) -> CheckReport:
    """A passed report, failed where a streamed answer is not the non-streamed one
    (``wrong_answer``), a streamed request got no answer (``runtime_crash``, judged by the
    trial from the engine's state) or the stall watchdog ended it (a hang when the engine
    sat idle with the stream open, slow when it worked: :func:`judge_silence`)."""
    for o in outcomes:
        report.results.append(
            CheckResult(
                name=f"stream-{o.name}",
                prompt=o.prompt,
                output=o.streamed,
                expectation="the non-streamed greedy answer",
                passed=o.matched,
                error=o.error,
                error_kind=o.error_kind,
            )
        )
        if o.note:
            report.evidence.append(o.note)
        if o.error and o.error_kind in WATCHDOG_ERRORS:
            category, transient, why = judge_silence(
                working=o.error_kind == "slow", watched=True, health_status=o.health_status
            )
            evidence = [o.error, f"{why}; /health answered {o.health_status or 'nothing'}"]
            return CheckReport(False, category, evidence, report.results, transient=transient)
        if o.error:
            return CheckReport(False, Category.RUNTIME_CRASH, [o.error], report.results)
        if o.evidence:
            return CheckReport(False, Category.WRONG_ANSWER, [o.evidence], report.results)
    return report


def judge_results(results: list[CheckResult], garbage: list[str]) -> CheckReport:
    """Turn per-prompt results into one verdict (exposed for the fake-server tests)."""
    answered = [r for r in results if r.error is None]
    stops = detect_first_token_stops(
        [(r.output, r.completion_tokens, r.finish_reason) for r in answered]
    )
    if stops and len(answered) == len(results):
        garbage.insert(0, stops.evidence())
    errors = [f"{r.name}: {r.error}" for r in results if r.error]
    if garbage:
        return CheckReport(False, Category.GARBAGE_OUTPUT, garbage + errors, results)
    if errors:
        return CheckReport(False, Category.RUNTIME_CRASH, errors, results)
    wrong = [
        f"{r.name}: expected {r.expectation}, got {quote(r.output)} "
        f"for prompt {quote(r.prompt, 60)}"
        for r in results
        if not r.passed
    ]
    if wrong:
        return CheckReport(False, Category.WRONG_ANSWER, wrong, results)
    return CheckReport(True, None, [], results)


class LoadLevel(Protocol):
    """What the benchmark hands back per concurrency level (a subset of its LevelResult)."""

    @property
    def value(self) -> float: ...  # the concurrency (or request rate) of this level

    @property
    def samples(self) -> list[str]: ...  # sampled generated texts

    @property
    def errors(self) -> dict[str, int]: ...  # error kind -> count


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def check_under_load(
    levels: Iterable[LoadLevel],
    baseline: Sequence[str | None] | None = None,
    known: Sequence[KnownAnswer] = (),
) -> CheckReport:
    """Detectors over each level's samples, lowest level first; fail where trouble began.

    Where the level recorded sentinels (``sentinel_prompts``, ``sentinel_answers`` and
    ``idle_answers``), their greedy answers under load must agree with the idle ones and
    those that are ``known`` answers must still be right
    (:mod:`bringup.checks.load_answers`).

    ``baseline`` (else a level's own ``idle_answers``, when the benchmark recorded them) is
    the same prompts answered with the server idle. A sample is garbage only when its
    idle answer was not: a small base model loops a word on nonsense prompts (the
    benchmark's word-salad prompts give `` the the the``) on a healthy engine too, and
    that is not what load did to it.
    """
    results: list[CheckResult] = []
    for level in sorted(levels, key=lambda lv: lv.value):
        at = _fmt(level.value)
        stall = getattr(level, "stall", None)
        if stall:
            return _stalled(at, stall, level)
        idle = baseline if baseline is not None else getattr(level, "idle_answers", None)
        findings: list[str] = []
        for i, text in enumerate(level.samples):
            finding = detect_garbage(text)
            calm = idle[i] if idle is not None and i < len(idle) else None
            if finding and calm is not None and detect_garbage(calm) is not None:
                finding = None  # garbage at idle too: the prompt's doing, not the load's
            results.append(
                CheckResult(
                    name=f"load-{at}-{i + 1}",
                    prompt="",
                    output=text,
                    expectation=None,
                    passed=finding is None,
                    detector=finding.detector if finding else None,
                )
            )
            if finding:
                findings.append(f"at concurrency {at}, sample {i + 1}: {finding.evidence()}")
        n_err = sum(level.errors.values())
        if findings:
            return CheckReport(False, Category.GARBAGE_OUTPUT, findings + _errors(level), results)
        answers = judge_sentinels(
            at,
            getattr(level, "sentinel_prompts", []),
            getattr(level, "sentinel_answers", []),
            getattr(level, "idle_answers", []),
            {ka.prompt: ka for ka in known},
        )
        for rule, category in (
            ("known_answer", Category.WRONG_ANSWER),
            ("idle_mismatch", Category.ACCURACY_REGRESSION),
        ):
            hits = [f.evidence for f in answers if f.rule == rule]
            if hits:
                return CheckReport(False, category, hits + _errors(level), results)
        if n_err:
            return CheckReport(False, Category.ERRORS_UNDER_LOAD, _errors(level), results)
    return CheckReport(True, None, [], results)


def _stalled(at: str, stall: dict[str, Any], level: LoadLevel) -> CheckReport:
    """The stall watchdog ended streams: judged by :func:`judge_silence` from what the
    engine did during the silence (``stall["progress"]``, sampled by the benchmark, or
    ``stall["slow"]``: the watchdog itself saw it work) and what /health answered."""
    health = stall.get("health_status")
    line = (
        f"at concurrency {at}: {stall.get('requests', 0)} stream(s) "
        f"{'too slow' if stall.get('slow') else 'stalled'}: "
        f"{stall.get('detail', '')} ({stall.get('watchdog', '')}); "
        f"/health answered {health or 'nothing'}"
    )
    progress = stall.get("progress") or {}
    working = bool(progress.get("progressing") or stall.get("slow"))
    category, transient, _ = judge_silence(working=working, watched=True, health_status=health)
    evidence = [line, *progress.get("evidence", []), *_errors(level)]
    return CheckReport(False, category, evidence, transient=transient)


def _errors(level: LoadLevel) -> list[str]:
    at = _fmt(level.value)
    items: Sequence[tuple[str, int]] = sorted(level.errors.items(), key=lambda kv: -kv[1])
    return [f"at concurrency {at}: {n} request errors of kind {kind}" for kind, n in items if n]
