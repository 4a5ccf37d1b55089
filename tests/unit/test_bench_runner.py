"""run_benchmark end to end against the in-process fake server."""

from __future__ import annotations

import orjson
import pytest

from bringup.bench import BenchConfig, BenchReport, run_benchmark
from bringup.bench.load import arrival_offsets
from bringup.spec import BenchSpec
from bringup.testing.fakeserver import FakeServer, FakeServerConfig


async def _bench(server_cfg: FakeServerConfig, **kw: object) -> BenchReport:
    base = {"concurrency": [1], "input_tokens": 16, "output_tokens": 8, "requests": 4, "warmup": 1}
    async with FakeServer(server_cfg) as srv:
        return await run_benchmark(srv.url, BenchConfig(**(base | kw)))  # type: ignore[arg-type]


async def test_closed_loop_levels_counts_and_summary_keys() -> None:
    report = await _bench(FakeServerConfig(event_rate=400), concurrency=[1, 3], requests=6)
    assert [lv.tag for lv in report.levels] == ["c1", "c3"]
    for lv in report.levels:
        m = lv.metrics
        assert (m.completed, m.failed, m.length_mismatch) == (6, 0, 0)
        ttft = m.latency["ttft_ms"]
        assert 0 < ttft.p50 <= ttft.p99 <= ttft.max
        assert m.latency["itl_ms"].n == 6 * 7  # one ITL per token after the first
        assert m.latency["client_lag_ms"].n == 6 * 8
        assert m.latency["output_tokens"].p50 == 8
    s = report.summary()
    keys = "output_tok_s ttft_p50_ms ttft_p99_ms itl_p50_ms itl_p99_ms tpot_p50_ms e2e_p99_ms"
    for key in [*keys.split(), "requests_s", "decode_tok_s_single", "error_rate"]:
        assert key in s, key
    assert s["output_tok_s"] == s["c3.output_tok_s"] > 0
    assert s["error_rate"] == 0.0
    assert report.tokenizer and report.length_options and report.model == "fake-model"
    assert report.levels[0].samples and len(report.levels[0].samples[0].split()) == 8
    orjson.dumps(report.to_dict())  # JSON-able


async def test_a_closed_loop_level_runs_at_least_two_waves_of_its_concurrency() -> None:
    report = await _bench(FakeServerConfig(event_rate=400), concurrency=[1, 4], requests=3)
    # c4 with 3 requests would never have 4 in flight: it runs 8
    assert [lv.metrics.completed for lv in report.levels] == [3, 8]


async def test_multi_token_chunks_give_per_token_itl() -> None:
    # 4 tokens per event every 20 ms: 5 ms per token, not 20 ms per chunk
    report = await _bench(
        FakeServerConfig(event_rate=50, tokens_per_event=4), output_tokens=16, requests=2
    )
    m = report.levels[0].metrics
    assert m.latency["itl_ms"].n == 2 * 12  # tokens after the first event's four
    assert m.latency["itl_ms"].p50 < 10.0
    assert m.latency["tpot_ms"].p50 < 10.0


async def test_open_loop_records_lateness_and_queue_under_a_cap() -> None:
    report = await _bench(
        FakeServerConfig(event_rate=100), concurrency=[], request_rate=[50.0], arrival="constant",
        requests=8, output_tokens=10, max_concurrency=1,
    )  # fmt: skip
    lv = report.levels[0]
    assert lv.kind == "rate" and lv.tag == "r50"
    lat = lv.metrics.latency
    assert lat["send_lateness_ms"].n == 8
    # one slot, requests due every 20 ms but each takes ~100 ms: they queue, and it shows
    assert lat["queue_ms"].max > 100.0
    assert lat["ttft_ms"].p50 < lat["queue_ms"].max


async def test_errors_are_counted_by_kind_with_an_example() -> None:
    report = await _bench(FakeServerConfig(event_rate=1000, fail_every=3), requests=6, warmup=0)
    lv = report.levels[0]
    # request 1 is the length-option probe, so 500s land on a known share of the rest
    assert lv.errors == {"http_500": 2}
    assert "injected failure" in lv.error_examples["http_500"]
    assert lv.metrics.completed + lv.metrics.failed == 6
    assert report.summary()["error_rate"] == pytest.approx(lv.metrics.failed / 6)


async def test_refused_length_options_are_dropped_and_noted() -> None:
    report = await _bench(
        FakeServerConfig(event_rate=1000, eos_after=3, reject_fields=["min_tokens"])
    )
    assert not report.length_options
    assert report.notes and "ignore_eos" in report.notes[0]
    assert report.levels[0].metrics.length_mismatch == 4  # EOS after 3 of 8 tokens


async def test_without_tokenizer_prompts_fall_back_to_words_and_chat_works() -> None:
    report = await _bench(
        FakeServerConfig(event_rate=1000, tokenizer=False, usage="include_usage"), endpoint="chat"
    )
    assert not report.tokenizer
    assert report.levels[0].metrics.completed == 4
    assert report.levels[0].metrics.length_mismatch == 0


async def test_repeats_give_an_interval() -> None:
    report = await _bench(FakeServerConfig(event_rate=500), repeats=3, requests=2)
    ci = report.output_tok_s_ci
    assert ci is not None and ci[0] <= report.summary()["output_tok_s"] <= ci[1]
    assert report.levels[0].metrics.completed == 6
    assert report.summary()["output_tok_s_ci_lo"] == ci[0]


async def test_duration_bounds_a_closed_loop_level() -> None:
    report = await _bench(
        FakeServerConfig(event_rate=200), duration_s=0.5, output_tokens=10, requests=1
    )
    m = report.levels[0].metrics
    # ~50 ms per request for 0.5 s: far more than the (ignored) request count of 1
    assert m.completed >= 4
    assert m.repeats[0].window_s >= 0.5


async def test_several_client_processes_share_a_level() -> None:
    report = await _bench(
        FakeServerConfig(event_rate=500), concurrency=[4], requests=8, processes=2
    )
    m = report.levels[0].metrics
    assert m.completed == 8
    assert report.levels[0].errors == {}
    assert len(report.levels[0].samples) == BenchConfig().sample_outputs


def test_arrival_offsets_are_absolute_and_bounded() -> None:
    const = arrival_offsets(4.0, "constant", count=5, duration_s=None, seed=0)
    assert const == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    pois = arrival_offsets(100.0, "poisson", count=None, duration_s=20.0, seed=1)
    assert pois == sorted(pois) and pois[-1] < 20.0
    assert 1800 < len(pois) < 2200  # about rate * duration
    assert arrival_offsets(100.0, "poisson", count=None, duration_s=20.0, seed=1) == pois


def test_from_spec_scales_requests_and_duration() -> None:
    spec = BenchSpec(concurrency=[1, 4], requests=10, duration_s=30.0, endpoint="chat")
    cfg = BenchConfig.from_spec(spec, model="m", scale=0.25)
    assert cfg.requests == 3 and cfg.duration_s == 7.5 and cfg.model == "m"
    assert cfg.concurrency == [1, 4] and cfg.endpoint == "chat"
    with pytest.raises(ValueError):
        BenchConfig.from_spec(spec, model=None, scale=0)
    with pytest.raises(ValueError):
        BenchConfig(concurrency=[0])
    assert "api_key" not in BenchConfig(api_key="sk-secret").public()
    assert "sk-secret" not in repr(BenchConfig(api_key="sk-secret"))
