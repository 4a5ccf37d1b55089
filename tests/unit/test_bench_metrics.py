"""Percentiles, distributions and intervals across repeats."""

from __future__ import annotations

import statistics

import pytest

from bringup.bench.metrics import (
    Distribution,
    Interval,
    coalesced_share,
    distributions,
    percentile,
    window_figures,
)
from bringup.bench.records import RequestRecord


def test_percentile_interpolates_like_numpy_linear() -> None:
    xs = [1.0, 2.0, 3.0, 4.0]
    assert percentile(xs, 50) == 2.5
    assert percentile(xs, 0) == 1.0 and percentile(xs, 100) == 4.0
    assert percentile(xs, 90) == pytest.approx(3.7)
    assert percentile([5.0], 99) == 5.0
    with pytest.raises(ValueError):
        percentile([], 50)


def test_distribution_scales_and_orders() -> None:
    d = Distribution.of([0.001 * i for i in range(1, 101)], 1000.0)
    assert d is not None
    assert d.n == 100 and d.max == pytest.approx(100.0)
    assert d.p50 <= d.p90 <= d.p95 <= d.p99 <= d.max
    assert d.mean == pytest.approx(50.5)
    assert Distribution.of([]) is None


def test_interval_uses_student_t() -> None:
    values = [10.0, 12.0, 11.0]
    iv = Interval.of(values)
    assert iv is not None
    half = 4.303 * statistics.stdev(values) / 3**0.5
    assert iv.mean == pytest.approx(11.0)
    assert (iv.lo, iv.hi) == pytest.approx((11.0 - half, 11.0 + half))
    one = Interval.of([5.0])
    assert one is not None and one.lo == one.hi == 5.0 and one.n == 1


def _rec(i: int, sent: float, end: float, tokens: int, error: str | None = None) -> RequestRecord:
    r = RequestRecord(index=i, scheduled=sent, dispatched=sent, sent=sent, end=end)
    r.output_tokens = tokens
    r.event_times = [sent + 0.1 + 0.01 * k for k in range(tokens)]
    r.event_tokens = [1] * tokens
    r.error = error
    return r


def test_window_counts_good_tokens_over_first_send_to_last_end() -> None:
    recs = [_rec(0, 0.0, 1.0, 10), _rec(1, 0.5, 2.0, 10), _rec(2, 0.5, 1.0, 0, "http_500")]
    w = window_figures(recs)
    assert w.window_s == pytest.approx(2.0)
    assert w.output_tok_s == pytest.approx(10.0)
    assert w.requests_s == pytest.approx(1.0)
    assert (w.completed, w.failed) == (2, 1)
    assert w.ttft_p50_ms == pytest.approx(100.0)
    assert w.itl_p50_ms == pytest.approx(10.0)


def test_client_delay_and_coalesced_share_and_the_late_load_note() -> None:
    from bringup.bench.report import level_result, load_notes

    recs = [_rec(i, float(i), float(i) + 1.0, 4) for i in range(10)]
    for r in recs:
        r.left = r.sent + 0.0002  # 0.2 ms to get each request out
        r.event_reads = [0, 1, 1, 2]  # the 2nd and 3rd events came in one read
    lat = distributions(recs, open_loop=False)
    assert lat["client_delay_ms"].p99 == pytest.approx(0.2)
    assert coalesced_share(recs) == pytest.approx(1 / 4)
    level = level_result(
        "concurrency", 4.0, [window_figures(recs)], recs, asked_tokens=4, samples=0,
        error_examples={}, arrival_clock="kernel",
    )  # fmt: skip
    assert level.flat()["coalesced_share"] == pytest.approx(0.25)
    notes = load_notes([level])
    assert notes == ["arrival times: the kernel's receive stamps (SO_TIMESTAMPNS)"]
    for r in recs[:2]:
        r.left = r.sent + 0.05  # two requests 50 ms late: p99 over 10 ms
    late = level_result(
        "concurrency", 4.0, [window_figures(recs)], recs, asked_tokens=4, samples=0,
        error_examples={}, arrival_clock="client",
    )  # fmt: skip
    notes = load_notes([late])
    assert "client's own clock" in notes[0]
    assert notes[1].startswith("c4: the client got requests out late")
