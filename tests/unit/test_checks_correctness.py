"""run_correctness, check_under_load, the suite loader and the probe, on a fake server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from click.testing import CliRunner

from bringup.bench.stall import StallWatch
from bringup.checks import CheckReport, check_under_load, run_correctness, suite_for
from bringup.checks.known_answers import KnownAnswer, builtin_suite
from bringup.checks.probe import run_probe
from bringup.checks.stream_text import Engine
from bringup.errors import SpecError
from bringup.http import OpenAIClient
from bringup.spec import Spec, parse_spec
from bringup.testing.hogs import Slack
from bringup.verdict import Category

EXTRA = """
[engine]
name = "llama.cpp"
[model]
path = "m.gguf"
[checks]
known_answers = false
extra = [
  {name = "add", prompt = "2 + 2 =", numeric = 4, max_tokens = 3},
  {name = "capital", prompt = "The capital of France is", regex = "^\\\\s*Paris", max_tokens = 4},
]
"""

GOOD = {
    "2 + 2 =": " 4\n",
    "The capital of France is": " Paris, the city",
    "The Eiffel Tower is located in the city of": " Paris,",
}
PROSE = " a process that turns light into chemical energy stored in sugar molecules."


@dataclass
class Fake:
    url: str = ""
    answer: Callable[[str], tuple[str, int, str]] = lambda p: (GOOD.get(p, PROSE), 5, "length")
    status: int = 200
    health_status: int = 200
    prompts: list[str] = field(default_factory=list)
    # a streamed answer's events (default: the answer in pieces of up to 5 characters)
    events: Callable[[str], list[str]] = lambda text: [
        text[i : i + 5] for i in range(0, len(text), 5)
    ]
    finish: bool = True  # a stream ends with a finish reason and [DONE]
    stall: bool = False  # a stream goes silent after its first event, connection open
    resume: asyncio.Event = field(default_factory=asyncio.Event)  # ...until this is set
    streams: int = 0
    pace_s: float = 0.0  # a pause before each streamed event: a slow, working engine


@pytest.fixture
async def fake() -> AsyncIterator[Fake]:
    state = Fake()

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        state.prompts.append(body["prompt"])
        if state.status != 200:
            return web.json_response({"error": {"message": "CUDA error"}}, status=state.status)
        text, n, reason = state.answer(body["prompt"])
        if body.get("stream"):
            state.streams += 1
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for piece in state.events(text):
                await asyncio.sleep(state.pace_s)
                event = {"choices": [{"text": piece, "index": 0, "finish_reason": None}]}
                await resp.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                if state.stall:
                    await state.resume.wait()
            if state.finish:
                end = {"choices": [{"text": "", "index": 0, "finish_reason": reason}]}
                await resp.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")
            await resp.write_eof()
            return resp
        return web.json_response(
            {
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": reason}],
                "usage": {"completion_tokens": n},
            }
        )

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"}, status=state.health_status)

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", health)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    state.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    yield state
    await runner.cleanup()


@pytest.fixture
def spec() -> Spec:
    return parse_spec(EXTRA)


async def test_all_known_answers_pass(fake: Fake, spec: Spec) -> None:
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert report.passed and report.category is None
    names = [r.name for r in report.results]
    assert names[:2] == ["add", "capital"] and any(n.startswith("free-text") for n in names)
    stored = report.to_dict()
    assert stored["results"][0]["prompt"] == "2 + 2 =" and stored["results"][0]["output"] == " 4\n"
    assert stored["results"][0]["expectation"] == "numeric 4.0" and stored["results"][0]["passed"]
    assert CheckReport.from_dict(json.loads(json.dumps(stored))).results == report.results


async def test_wrong_answer_quotes_output(fake: Fake, spec: Spec) -> None:
    fake.answer = lambda p: (" 5\n" if p == "2 + 2 =" else GOOD.get(p, PROSE), 2, "length")
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert not report.passed and report.category is Category.WRONG_ANSWER
    assert (
        len(report.evidence) == 1
        and "' 5\\n'" in report.evidence[0]
        and "add" in report.evidence[0]
    )


async def test_exclamation_garbage_beats_wrong_answer(fake: Fake, spec: Spec) -> None:
    fake.answer = lambda p: ("!" * 40, 40, "length")
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert report.category is Category.GARBAGE_OUTPUT
    assert "repeated_token" in report.evidence[0] and "!!!!" in report.evidence[0]
    assert all(r.detector == "repeated_token" for r in report.results)


async def test_every_prompt_ending_at_first_token(fake: Fake, spec: Spec) -> None:
    fake.answer = lambda p: (".", 1, "stop")
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert report.category is Category.GARBAGE_OUTPUT
    assert report.evidence[0].startswith("first_token_stop")


async def test_server_errors_are_runtime_crash(fake: Fake, spec: Spec) -> None:
    fake.status = 500
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert report.category is Category.RUNTIME_CRASH and "CUDA error" in report.evidence[0]


@dataclass
class Level:
    value: float
    samples: list[str]
    errors: dict[str, int] = field(default_factory=dict)


async def test_streamed_text_equal_to_the_answer_passes_whatever_the_event_sizes(
    fake: Fake, spec: Spec
) -> None:
    # several tokens per event is legitimate: only the assembled text is compared
    fake.events = lambda text: [text[:1], text[1:30], text[30:]]
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert report.passed, report.evidence
    stream = [r for r in report.results if r.name.startswith("stream-")]
    assert fake.streams == 1 and len(stream) == 1 and stream[0].output == PROSE


async def test_a_stream_dropping_every_third_event_is_a_wrong_answer(
    fake: Fake, spec: Spec
) -> None:
    def dropping(text: str) -> list[str]:
        pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
        return [p for i, p in enumerate(pieces) if i % 3 != 2]

    fake.events = dropping
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert not report.passed and report.category is Category.WRONG_ANSWER
    (line,) = report.evidence
    # the prompt is named, and the first differing offset: " a process t|hat" against
    # " a process t|urns", the third event (" that") being the dropped one
    assert line.startswith("free-text-1: the streamed answer to prompt 'The history of")
    assert "from character 12 on" in line
    assert "streamed ' a process turns ligto chemica" in line
    assert "non-streamed ' a process that turns" in line


async def _silent_stream_beside(
    fake: Fake, spec: Spec, engine_code: str | None, tmp_path: Path
) -> tuple[CheckReport, float]:
    """The correct stage against a server whose stream goes silent after its first event,
    judged as if ``engine_code`` ran as its engine process (None: no process to see)."""
    fake.stall = True
    log = tmp_path / "engine.log"
    log.write_text("")
    proc = None
    if engine_code is not None:
        # the interpreter's own start-up is CPU too: judge only what comes after it
        code = f"print('up', flush=True)\n{engine_code}"
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    started = time.monotonic()
    try:
        async with OpenAIClient(fake.url, timeout_s=300) as c:
            engine = Engine(proc.pid if proc else None, str(log))
            report = await run_correctness(c, spec, engine)
    finally:
        fake.resume.set()  # the server's handler may end (the client has long given up)
        if proc is not None:
            proc.kill()
            proc.wait()
    return report, time.monotonic() - started


async def test_a_stream_stuck_mid_answer_on_an_idle_engine_is_a_hang(
    fake: Fake, spec: Spec, tmp_path: Path
) -> None:
    report, took = await _silent_stream_beside(fake, spec, "import time; time.sleep(300)", tmp_path)
    assert not report.passed and report.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert not report.transient  # a property of the configuration: it prunes
    assert report.failure_kind == "stall"
    assert "went silent after ' a pr'" in report.evidence[0]
    assert "no token for" in report.evidence[0] and "mid-stream" in report.evidence[0]
    assert "sat idle" in report.evidence[1] and "/health answered 200" in report.evidence[1]
    assert took < 120  # bounded by the watchdog (5 s floor), not the session's 300 s


async def test_a_stream_silent_while_the_engine_computes_is_slow_not_a_hang(
    fake: Fake, spec: Spec, tmp_path: Path
) -> None:
    report, took = await _silent_stream_beside(fake, spec, "while True: pass", tmp_path)
    assert not report.passed and report.category is Category.SLOW_RESPONSE
    assert report.transient  # the moment's, not the configuration's: never prunes
    assert report.failure_kind == "slow"
    assert "was too slow" in report.evidence[0] and "the engine kept working" in report.evidence[0]
    assert took < 200  # up to the slow bound (10 x the 5 s limit), not the session's 300 s


async def test_a_stream_silent_where_no_engine_can_be_seen_is_a_hang(
    fake: Fake, spec: Spec, tmp_path: Path
) -> None:
    # the fake server is this process: its CPU time says nothing, silence is all there is
    report, _ = await _silent_stream_beside(fake, spec, None, tmp_path)
    assert report.category is Category.STARTUP_TIMEOUT_OR_HANG and not report.transient


async def test_a_slow_stream_past_the_clients_timeout_is_not_cut_short(
    fake: Fake, spec: Spec
) -> None:
    # every event well inside the watchdog's gap, the whole stream past the client's 1 s
    fake.pace_s = 0.25
    async with OpenAIClient(fake.url, timeout_s=1.0) as c:
        report = await run_correctness(c, spec)
    assert report.passed, report.evidence
    stream = [r for r in report.results if r.name.startswith("stream-")]
    assert stream and stream[0].output == PROSE


async def test_a_stream_still_arriving_at_its_deadline_is_slow_not_a_crash(
    fake: Fake, spec: Spec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a watchdog armed tight (0.4 s limits) and a stream trickling one character per
    # 0.15 s: the deadline (0.4 + 32 x 0.4 s) passes mid-stream, no silence ever trips
    monkeypatch.setattr(
        "bringup.checks.stream_text.from_requests",
        lambda *a, **k: StallWatch(gap_s=0.4, first_s=0.4),
    )
    fake.events = lambda text: list(text * 2)
    fake.pace_s = 0.15
    async with OpenAIClient(fake.url, timeout_s=1.0) as c:
        report = await run_correctness(c, spec)
    assert not report.passed and report.category is Category.SLOW_RESPONSE
    assert report.transient and report.failure_kind == "slow"
    assert "13.2s deadline passed" in report.evidence[0], report.evidence


async def test_an_unfinished_stream_fails(fake: Fake, spec: Spec) -> None:
    fake.finish = False
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert not report.passed and report.category is Category.WRONG_ANSWER
    assert "ended badly (incomplete)" in report.evidence[0]


async def test_a_stream_that_equals_the_re_asked_answer_passes(fake: Fake, spec: Spec) -> None:
    # greedy answers that part once the prompt is cached: the stream agrees with the re-ask
    asked = {"n": 0}
    cached = PROSE[:40] + " other words"

    def answer(prompt: str) -> tuple[str, int, str]:
        if prompt in GOOD:
            return GOOD[prompt], 5, "length"
        asked["n"] += 1
        return (PROSE if asked["n"] == 1 else cached), 5, "length"

    fake.answer = answer
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert report.passed, report.evidence
    assert asked["n"] == 3  # the first answer, the stream, the re-ask
    assert any("re-asked non-streamed answer" in e for e in report.evidence)


async def test_a_stream_that_fails_is_a_runtime_crash_with_its_kind(fake: Fake, spec: Spec) -> None:
    answered = {"n": 0}
    plain = fake.answer

    def answer(prompt: str) -> tuple[str, int, str]:
        answered["n"] += 1
        return plain(prompt)

    fake.answer = answer
    fake.events = lambda text: (_ for _ in ()).throw(RuntimeError("boom"))
    async with OpenAIClient(fake.url) as c:
        report = await run_correctness(c, spec)
    assert not report.passed and report.category is Category.RUNTIME_CRASH
    assert report.failure_kind != "other"


def test_under_load_names_the_concurrency_where_garbage_began() -> None:
    levels = [
        Level(8, ["!!!!!!!!!!!!!!!!!!!!!!", PROSE], {"timeout": 2}),
        Level(1, [PROSE, PROSE]),
        Level(4, [PROSE, "<pad><pad><pad><pad>"]),
    ]
    report = check_under_load(levels)
    assert report.category is Category.GARBAGE_OUTPUT
    assert report.evidence[0].startswith("at concurrency 4, sample 2: special_tokens")


def test_under_load_errors() -> None:
    report = check_under_load(
        [Level(1, [PROSE]), Level(16, [PROSE], {"http_503": 3, "timeout": 0})]
    )
    assert report.category is Category.ERRORS_UNDER_LOAD
    assert report.evidence == ["at concurrency 16: 3 request errors of kind http_503"]
    assert check_under_load([Level(1, [PROSE]), Level(2, [PROSE])]).passed


def test_under_load_compares_with_idle_answers() -> None:
    loop = " the" * 30
    levels = [Level(1, [loop, PROSE]), Level(4, [loop, "!" * 30])]
    report = check_under_load(levels, baseline=[loop, PROSE])
    assert report.category is Category.GARBAGE_OUTPUT
    assert report.evidence[0].startswith("at concurrency 4, sample 2:")
    assert not check_under_load(levels).passed  # without a baseline the loop itself fires


def test_builtin_suite_is_small_and_short() -> None:
    answers, prompts = builtin_suite()
    assert 6 <= len(answers) <= 10
    assert all(a.max_tokens <= 8 for a in answers)
    assert len(prompts) >= 16


def test_suite_file_and_extras(tmp_path: Path) -> None:
    suite = tmp_path / "mine.toml"
    suite.write_text('[[known_answer]]\nprompt = "1 + 1 ="\nnumeric = 2\n', encoding="utf-8")
    spec = parse_spec(EXTRA.replace("[checks]", f'[checks]\nsuite_file = "{suite}"'))
    answers = suite_for(spec)
    assert [a.prompt for a in answers] == ["1 + 1 =", "2 + 2 =", "The capital of France is"]
    assert answers[0].judge(" 2, and") and not answers[0].judge(" 3")


@pytest.mark.parametrize(
    "bad",
    [
        {"prompt": "x"},
        {"prompt": "x", "numeric": "four"},
        {"prompt": "x", "regex": "("},
        {"prompt": "", "exact": "y"},
        {"prompt": "x", "exact": "y", "regex": "y"},
    ],
)
def test_bad_known_answer_names_the_problem(bad: dict[str, Any]) -> None:
    with pytest.raises(SpecError):
        KnownAnswer.from_dict(bad)


def test_judge_kinds() -> None:
    mk = KnownAnswer.from_dict
    assert mk({"prompt": "p", "exact": "Paris"}).judge(" Paris\nand more")
    assert not mk({"prompt": "p", "exact": "Paris"}).judge(" Paris is")
    assert mk({"prompt": "p", "prefix": "Par"}).judge("  Paris")
    assert mk({"prompt": "p", "contains": "42"}).judge("it is 42.")
    assert mk({"prompt": "p", "numeric": 1000}).judge(" 1,000 people")
    assert not mk({"prompt": "p", "numeric": 4}).judge(" four")


async def test_probe_passes_and_fails(fake: Fake) -> None:
    # the answers are checked, not the speed: a busy machine may take seconds for each
    ok = await run_probe(fake.url, timeout_s=120)
    assert ok.passed and ok.verdict.startswith("ok:") and ok.health_status == 200
    fake.answer = lambda p: ("\x00\x01\x02\x03\x04", 5, "length")
    bad = await run_probe(fake.url, timeout_s=120)
    assert not bad.passed and bad.detector == "nonprintable" and "nonprintable" in bad.verdict
    fake.health_status = 503
    down = await run_probe(fake.url, timeout_s=120)
    assert not down.passed and "503" in down.verdict and "answer" not in down.steps


async def test_probe_of_nothing_fails_fast(slack: Slack) -> None:
    # refused at once (health 0, not a timeout), long before the timeout would end it
    res = await run_probe("http://127.0.0.1:9", timeout_s=120)
    assert not res.passed and res.health_status == 0 and res.elapsed_s < slack(50)


def test_probe_command_exit_codes(fake: Fake) -> None:
    from bringup.cli.probe_cmd import probe

    # CliRunner runs its own event loop; the fake server lives on the test's loop, so
    # only the no-server path is exercised here; the served path is in the integration test.
    result = CliRunner().invoke(probe, ["http://127.0.0.1:9", "--timeout", "2"])
    assert result.exit_code == 1 and result.output.startswith("fail:")
    from bringup.cli.main import cli

    # misuse becomes an exit code in the command group, as on the real command line
    args = ["probe", "http://127.0.0.1:9", "--json", "--api-key-env", "NOPE_X"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "NOPE_X is not set" in result.output
