"""Paired accuracy under load: candidate and reference under one load, a control's floor."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from bringup.checks.paired_load import (
    answers_under_load,
    background_load,
    floor_from,
    is_control,
    judge_under_load,
    note_control,
)
from bringup.http import OpenAIClient, RequestError
from bringup.spec import Spec, parse_spec
from bringup.verdict import Category

SPEC = """
[engine]
name = "llama.cpp"
[model]
path = "m.gguf"
[space]
"--cache-type-k" = ["f16", "q8_0"]
[bench]
concurrency = [1, 4]
[checks]
accuracy_prompts = 6
accuracy_tokens = 4
controls = ["--seed"]
paired_load = true
"""


def _next(letter: str, k: int) -> str:
    return " " + chr((ord(letter) - 97 + k) % 26 + 97)


@dataclass
class LoadSensitive:
    """An "alphabet model" whose logprobs move once other requests are in flight:
    by noise of +-``jitter`` (batched arithmetic), plus ``shift`` (a broken kernel)."""

    jitter: float = 0.0
    shift: float = 0.0
    seed: int = 0
    received: int = 0
    # "loaded": other requests arrived within the last second (a wide window, so that a
    # busy test machine pausing the client for a moment does not make a request look idle)
    arrivals: list[float] = field(default_factory=list)
    fillers: set[str] = field(default_factory=set)  # prompts of the background load

    def offset(self, rng: random.Random) -> float:
        t = time.monotonic()
        self.received += 1
        self.arrivals = [a for a in self.arrivals if t - a < 1.0] + [t]
        if len(self.arrivals) < 3:
            return 0.0
        return self.shift + rng.uniform(-self.jitter, self.jitter)


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[LoadSensitive], asyncio.Future[str]]]:
    runners: list[web.AppRunner] = []

    async def start(model: LoadSensitive) -> str:
        rng = random.Random(model.seed)

        async def completions(request: web.Request) -> web.Response:
            body = await request.json()
            if "logprobs" not in body:  # the measured prompts ask for logprobs, fillers not
                model.fillers.add(body["prompt"])
            off = model.offset(rng)
            await asyncio.sleep(0.005)  # the other streams' requests overlap this one
            last = body["prompt"].split()[-1][-1]
            content = []
            for _ in range(body["max_tokens"]):
                tok, alt = _next(last, 1), _next(last, 2)
                lp = -0.1 - abs(off)
                tops = [{"token": tok, "logprob": lp}, {"token": alt, "logprob": -2.5}]
                content.append({"token": tok, "logprob": lp, "top_logprobs": tops})
                last = tok[-1]
            text = "".join(c["token"] for c in content)
            choice = {"text": text, "logprobs": {"content": content}, "finish_reason": "length"}
            return web.json_response({"choices": [choice]})

        app = web.Application()
        app.router.add_post("/v1/completions", completions)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

    yield start  # type: ignore[misc]
    for r in runners:
        await r.cleanup()


def spec() -> Spec:
    return parse_spec(SPEC)


async def _under_load(url: str, s: Spec, reference=None):  # type: ignore[no-untyped-def]
    async with OpenAIClient(url) as c:
        return await answers_under_load(c, s, reference=reference)


async def test_candidate_is_judged_against_the_reference_under_load_and_the_control_floor(
    serve: Callable[[LoadSensitive], asyncio.Future[str]],
) -> None:
    s = spec()
    noisy = LoadSensitive(jitter=0.04, seed=1)
    ref_load = await _under_load(await serve(noisy), s)
    measured = len(ref_load.prompts)  # one request each: the reference forces nothing
    assert ref_load.meta["streams"] == 4 and ref_load.meta["load_requests"] > 0
    assert noisy.received >= measured + 3  # three other streams ran beside them

    # the control arm: a second launch of the reference, under the same load
    control = await _under_load(await serve(LoadSensitive(jitter=0.04, seed=2)), s, ref_load)
    paired, _ = await judge_under_load(ref_load, control, s, None)
    assert paired.passed and not paired.judged and "not judged" in paired.evidence[0]
    floor = floor_from({"accuracy_under_load": paired.to_dict()}, "t002")
    assert floor is not None and 0.0 < floor["mad"] <= floor["mad_hi"] < 0.08

    # a healthy candidate: only the same noise; passes under limits raised by the floor
    healthy = await _under_load(await serve(LoadSensitive(jitter=0.04, seed=3)), s, ref_load)
    ok, _ = await judge_under_load(ref_load, healthy, s, floor)
    assert ok.passed and ok.judged
    assert ok.limits["max_logprob_mad"] == pytest.approx(0.10 + floor["mad_hi"], abs=1e-6)

    # a candidate whose answers load pushes far beyond the floor fails, naming it
    broken = LoadSensitive(jitter=0.04, shift=0.6, seed=4)
    bad_load = await _under_load(await serve(broken), s, ref_load)
    bad, _ = await judge_under_load(ref_load, bad_load, s, floor)
    assert not bad.passed and bad.category is Category.ACCURACY_REGRESSION
    assert "under load (4 streams)" in bad.evidence[0] and "control t002" in bad.evidence[-1]

    # without a control arm the same drift is recorded, never turned into a verdict
    unjudged, _ = await judge_under_load(ref_load, bad_load, s, None)
    assert unjudged.passed and not unjudged.judged


async def test_the_reference_and_a_candidate_are_under_the_same_load(
    serve: Callable[[LoadSensitive], asyncio.Future[str]],
) -> None:
    s = spec()
    ref_model, cand_model = LoadSensitive(seed=1), LoadSensitive(seed=2)
    ref_load = await _under_load(await serve(ref_model), s)
    cand_load = await _under_load(await serve(cand_model), s, ref_load)
    # the measured prompts are those the reference answered, and the fillers beside them
    # the same prompts for both (the reference's load once used half as many)
    assert cand_load.prompts == ref_load.prompts and len(ref_load.prompts) == 12
    assert ref_model.fillers == cand_model.fillers == set(ref_load.prompts)
    assert ref_load.meta["load_prompts"] == cand_load.meta["load_prompts"] == 12


def test_a_control_differs_from_the_reference_only_in_control_flags() -> None:
    ref = {"--cache-type-k": "f16"}
    assert is_control(ref | {"--seed": 2}, ref, ["--seed"])
    assert not is_control(ref, ref, ["--seed"])  # the reference itself
    assert not is_control({"--cache-type-k": "q8_0", "--seed": 2}, ref, ["--seed"])
    assert floor_from({}, "t") is None


async def test_the_trial_keeps_the_reference_under_load_and_judges_once_a_control_ran(
    serve: Callable[[LoadSensitive], asyncio.Future[str]], tmp_path: Path
) -> None:
    """Reference trial -> control trial -> candidate trial, through the trial's own step and
    the sweep's bookkeeping (note_control), on servers whose answers move under load."""
    from bringup.checks.accuracy import collect_answers
    from bringup.engines.registry import get_engine
    from bringup.plan.base import PlannedTrial
    from bringup.trial import TrialContext, TrialRun
    from bringup.trial_checks import _paired_under_load
    from bringup.verdict import TrialResult

    s = spec()
    ref_flags = s.reference_config()
    adapter = get_engine("llama.cpp")

    async def trial(model: LoadSensitive, flags: dict[str, object], ctx: TrialContext) -> TrialRun:
        run = TrialRun(TrialResult(trial_id=f"t-{len(flags)}", flags=flags))
        async with OpenAIClient(await serve(model)) as client:
            if ctx.collect_reference:
                run.answers = await collect_answers(client, s)
            await _paired_under_load(ctx, PlannedTrial(flags), run, client)
        return run

    ref_run = await trial(
        LoadSensitive(jitter=0.04, seed=1),
        ref_flags,
        TrialContext(s, adapter, tmp_path, collect_reference=True),
    )
    reference = ref_run.answers
    assert reference is not None and reference.meta["under_load"]["meta"]["streams"] == 4

    control_flags = ref_flags | {"--seed": 7}
    ctx = TrialContext(s, adapter, tmp_path, reference=reference)
    control = await trial(LoadSensitive(jitter=0.04, seed=2), control_flags, ctx)
    assert control.result.checks["accuracy_under_load"]["judged"] is False
    # a candidate is not a control; the control is, and leaves its floor with the reference
    assert not note_control(reference, ref_flags | {"--cache-type-k": "q8_0"}, ref_flags,
                            s.checks.controls, control.result.checks, "t002")  # fmt: skip
    assert note_control(
        reference, control_flags, ref_flags, s.checks.controls, control.result.checks, "t002"
    )
    assert reference.meta["load_floor"]["trial"] == "t002"

    broken = await trial(
        LoadSensitive(jitter=0.04, shift=0.6, seed=3), ref_flags | {"--cache-type-k": "q8_0"}, ctx
    )
    assert broken.result.failure is not None
    assert broken.result.failure.category is Category.ACCURACY_REGRESSION
    assert broken.result.checks["accuracy_under_load"]["judged"] is True


class _SwallowsCancel:
    """A client whose request turns a cancel into its own timeout (as aiohttp does when
    the cancel meets its request timer): the filler sees a RequestError, not a cancel."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, prompt: str, *, max_tokens: int) -> None:
        self.calls += 1
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            t = asyncio.current_task()
            if t is not None:
                t.uncancel()
            raise RequestError("POST /v1/completions: no response (timed out)") from None


async def test_fillers_end_with_the_block_even_when_a_cancel_is_swallowed() -> None:
    client = _SwallowsCancel()

    async def measured() -> int:
        async with background_load(client, ["a", "b"], 2, 4) as n:  # type: ignore[arg-type]
            await asyncio.sleep(0.2)
            return n[0]

    # before the stop flag the fillers looped for good and this never returned
    task = asyncio.ensure_future(measured())
    done, _ = await asyncio.wait([task], timeout=30)
    assert done, "the fillers went on after the block ended"
    calls = client.calls
    await asyncio.sleep(0.3)
    assert client.calls == calls  # nothing asked once the block ended
