"""Speculative decoding: identical greedy output, acceptance from timings or /metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from bringup.checks.reference import ReferenceAnswers
from bringup.checks.speculative import (
    bench_acceptance,
    from_metrics,
    from_timings,
    speculative_check,
    speculative_flags,
    speculative_warnings,
)
from bringup.http import Completion, OpenAIClient
from bringup.verdict import Category

REF_FLAGS = {"--flash-attn": "on", "--spec-type": "none"}
seen: list[str] = []  # prompts the fake engine was asked
PROMPTS = ["The capital of France is", "Two plus two is", "The sky is"]
ANSWERS = [" Paris, a city", " four, always", " blue by day"]
VLLM_BEFORE = """# TYPE vllm:spec_decode_num_drafts counter
vllm:spec_decode_num_drafts_total{model_name="m"} 10.0
# TYPE vllm:spec_decode_num_draft_tokens counter
vllm:spec_decode_num_draft_tokens_total{model_name="m"} 40.0
# TYPE vllm:spec_decode_num_accepted_tokens counter
vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 30.0
"""


def reference() -> ReferenceAnswers:
    return ReferenceAnswers(PROMPTS, 8, [Completion(a) for a in ANSWERS])


def test_speculative_flags_are_named_and_off_values_are_not() -> None:
    assert speculative_flags({"--spec-type": "ngram-mod", "--threads": 2}) == {
        "--spec-type": "ngram-mod"
    }
    assert speculative_flags({"--spec-type": "none", "-md": ""}) == {}
    assert speculative_flags({"--speculative-config": '{"method": "eagle3"}'})
    assert speculative_flags({"--model-draft": "d.gguf", "--flash-attn": "on"})


def test_acceptance_from_llama_server_timings_and_vllm_counters() -> None:
    acc = from_timings([{"draft_n": 12, "draft_n_accepted": 9}, {}])
    assert acc is not None and acc.rate == 0.75 and acc.source == "timings"
    assert from_timings([{"predicted_n": 8}]) is None
    after = VLLM_BEFORE.replace("10.0", "14.0").replace("40.0", "56.0").replace("30.0", "34.0")
    acc = from_metrics(VLLM_BEFORE, after)  # 16 drafted, 4 accepted over 4 steps
    assert acc is not None and acc.rate == 0.25 and acc.accept_len == 2.0
    gauge = "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length 2.7\n"
    acc = from_metrics("", gauge)
    assert acc is not None and acc.accept_len == 2.7 and acc.rate is None
    assert from_metrics("", "<html>not found</html>") is None


@pytest.fixture
async def engine() -> AsyncIterator[Callable[[Callable[[str], str], int], Any]]:
    runners: list[web.AppRunner] = []

    async def start(answer: Callable[[str], str], accepted: int) -> str:
        async def completions(request: web.Request) -> web.Response:
            body = await request.json()
            seen.append(body["prompt"])
            timings = {"draft_n": 4, "draft_n_accepted": accepted}
            return web.json_response(
                {"choices": [{"text": answer(body["prompt"])}], "timings": timings}
            )

        app = web.Application()
        app.router.add_post("/v1/completions", completions)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        return f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

    yield start
    for r in runners:
        await r.cleanup()


def _right(prompt: str) -> str:
    return ANSWERS[PROMPTS.index(prompt)]


async def answered(client: OpenAIClient) -> ReferenceAnswers:
    """The candidate's greedy answers, as the accurate stage asks them."""
    return ReferenceAnswers(PROMPTS, 8, [await client.complete(p, max_tokens=8) for p in PROMPTS])


async def test_identical_output_passes_and_acceptance_is_recorded(engine: Any) -> None:
    cand = REF_FLAGS | {"--spec-type": "ngram-mod"}
    async with OpenAIClient(await engine(_right, 3)) as client:
        own = await answered(client)
        asked = len(seen)
        rep = await speculative_check(client, reference(), own, cand, REF_FLAGS)
    assert len(seen) == asked  # the accurate stage's answers: nothing asked again
    assert rep.passed and rep.judged and rep.identical == 3
    assert rep.metrics() == {"spec_acceptance_rate": 0.75}
    assert "3/3 answers identical" in rep.evidence[0] and "acceptance 0.750" in rep.evidence[0]


async def test_changed_greedy_output_fails_only_where_speculation_alone_differs(
    engine: Any,
) -> None:
    def wrong(prompt: str) -> str:
        return " Lyon, a city" if "France" in prompt else _right(prompt)

    cand = REF_FLAGS | {"--spec-type": "ngram-mod"}
    async with OpenAIClient(await engine(wrong, 1)) as client:
        own = await answered(client)
        rep = await speculative_check(client, reference(), own, cand, REF_FLAGS)
        assert not rep.passed and rep.category is Category.ACCURACY_REGRESSION
        assert "2/3 answers identical" in rep.evidence[0]
        assert "Lyon" in rep.evidence[1] and "Paris" in rep.evidence[1]
        # another flag differs as well: its drift is the accurate stage's to judge
        other = cand | {"--flash-attn": "off"}
        rep = await speculative_check(client, reference(), own, other, REF_FLAGS)
    assert rep.passed and not rep.judged and "not judged" in rep.evidence[0]


def vllm_counters(drafts: int, drafted: int, accepted: int) -> str:
    return (
        VLLM_BEFORE.replace("10.0", f"{drafts}.0")
        .replace("40.0", f"{drafted}.0")
        .replace("30.0", f"{accepted}.0")
    )


def test_benchmark_acceptance_far_above_natural_prompts_is_a_warning() -> None:
    """The H200 run's figures: 14 of 908 drafted tokens accepted on the accuracy prompts;
    the benchmark's synthetic prompts let n-gram drafts land most of the time."""
    report: dict[str, Any] = {
        "acceptance": {"source": "metrics", "rate": 14 / 908, "accept_len": 1.062},
        "figures": {"spec_acceptance_rate": 0.0154},
    }
    before = vllm_counters(227, 908, 14)
    bench_acceptance(report, before, vllm_counters(227 + 2000, 908 + 8000, 14 + 5800))
    assert report["figures"]["bench_spec_acceptance_rate"] == 0.725
    assert report["figures"]["spec_acceptance_rate"] == 0.0154  # the natural figure kept
    assert (
        "0.72 in the benchmark against 0.02 on the accuracy prompts" in report["unrepresentative"]
    )
    (line,) = speculative_warnings([("t005", {"speculative": report}), ("t004", {})])
    assert line.startswith("t005: speculative acceptance")


def test_benchmark_acceptance_close_to_natural_prompts_says_nothing() -> None:
    report: dict[str, Any] = {"acceptance": {"source": "metrics", "rate": 0.6, "accept_len": 3.4}}
    bench_acceptance(report, vllm_counters(0, 0, 0), vllm_counters(100, 400, 280))  # 0.70
    assert report["figures"]["bench_spec_acceptance_rate"] == 0.7
    assert "unrepresentative" not in report
    # SGLang's gauge: lengths compared where no rates are
    sglang: dict[str, Any] = {"acceptance": {"source": "gauge", "rate": None, "accept_len": 1.1}}
    gauge = "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length {}\n"
    bench_acceptance(sglang, "", gauge.format(1.5))
    assert "unrepresentative" not in sglang
    bench_acceptance(sglang, "", gauge.format(3.6))
    assert "accept length 3.60 in the benchmark against 1.10" in sglang["unrepresentative"]
    # an engine that exposes nothing: nothing recorded
    quiet: dict[str, Any] = {"acceptance": None}
    bench_acceptance(quiet, "", "")
    assert quiet == {"acceptance": None}
