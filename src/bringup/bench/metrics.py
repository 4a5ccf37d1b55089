"""Percentiles, distributions and confidence intervals over request records.

Percentiles interpolate linearly between order statistics (numpy's default "linear"
method). Latencies are reported in milliseconds, rates per second. ``client_delay_ms`` is
how long the client took to get a request out once it set out to send it (see
``RequestRecord.client_delay``); ``coalesced_share`` how many events came in a read together
with the event before them, so that no gap between them could be seen;
``ttft_upper_bound_share`` how many TTFTs are only upper bounds (the first token's read
brought later bytes too, see :mod:`bringup.bench.records`). The interval across
repeats is mean ± t(0.975, n-1) · s / sqrt(n), Student's t from :mod:`bringup.student`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from bringup.bench.records import RequestRecord
from bringup.student import t95


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of already sorted values, linear interpolation."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


@dataclass
class Distribution:
    """Summary of one latency (ms) or rate: percentiles, max, mean and the sample count."""

    p50: float
    p90: float
    p95: float
    p99: float
    max: float
    mean: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float], scale: float = 1.0) -> Distribution | None:
        xs = sorted(v * scale for v in values)
        if not xs:
            return None
        return cls(
            p50=percentile(xs, 50),
            p90=percentile(xs, 90),
            p95=percentile(xs, 95),
            p99=percentile(xs, 99),
            max=xs[-1],
            mean=math.fsum(xs) / len(xs),
            n=len(xs),
        )

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass
class Interval:
    """Mean across repeats with its 95% confidence interval (lo == hi == mean for one repeat)."""

    mean: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Interval | None:
        if not values:
            return None
        mean = math.fsum(values) / len(values)
        if len(values) < 2:
            return cls(mean, mean, mean, len(values))
        half = t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
        return cls(mean, mean - half, mean + half, len(values))

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


_MS = 1000.0


@dataclass
class WindowFigures:
    """Throughput and headline latencies of one repeat of one level."""

    output_tok_s: float
    input_tok_s: float
    requests_s: float
    ttft_p50_ms: float | None
    itl_p50_ms: float | None
    tpot_p50_ms: float | None
    e2e_p50_ms: float | None
    completed: int
    failed: int
    window_s: float


def window_figures(records: Sequence[RequestRecord]) -> WindowFigures:
    """Figures of one measured window: tokens of good requests over first send to last end."""
    good = [r for r in records if r.ok]
    window = max(r.end for r in records) - min(r.sent for r in records) if records else 0.0
    out_tok = sum(r.output_tokens for r in good)
    in_tok = sum(r.prompt_tokens or 0 for r in good)

    def med(values: Iterable[float | None]) -> float | None:
        xs = sorted(v for v in values if v is not None)
        return percentile(xs, 50) * _MS if xs else None

    return WindowFigures(
        output_tok_s=out_tok / window if window > 0 else 0.0,
        input_tok_s=in_tok / window if window > 0 else 0.0,
        requests_s=len(good) / window if window > 0 else 0.0,
        ttft_p50_ms=med(r.ttft for r in good),
        itl_p50_ms=med(x for r in good for x in r.itls()),
        tpot_p50_ms=med(r.tpot() for r in good),
        e2e_p50_ms=med(r.e2e for r in good),
        completed=len(good),
        failed=len(records) - len(good),
        window_s=window,
    )


def distributions(records: Sequence[RequestRecord], *, open_loop: bool) -> dict[str, Distribution]:
    """Latency distributions (ms) over the good requests of all repeats of a level."""
    good = [r for r in records if r.ok]
    named: dict[str, Distribution | None] = {
        "ttft_ms": Distribution.of((r.ttft for r in good if r.ttft is not None), _MS),
        "itl_ms": Distribution.of((x for r in good for x in r.itls()), _MS),
        "tpot_ms": Distribution.of((t for r in good if (t := r.tpot()) is not None), _MS),
        "e2e_ms": Distribution.of((r.e2e for r in good), _MS),
        "queue_ms": Distribution.of((r.sent - r.dispatched for r in records), _MS),
        "client_delay_ms": Distribution.of(
            (d for r in records if (d := r.client_delay) is not None), _MS
        ),
        "decode_tok_s": Distribution.of(d for r in good if (d := r.decode_tok_s()) is not None),
        "output_tokens": Distribution.of(float(r.output_tokens) for r in good),
        "client_lag_ms": Distribution.of((x for r in records for x in r.client_lag), _MS),
    }
    if open_loop:
        named["send_lateness_ms"] = Distribution.of(
            (r.dispatched - r.scheduled for r in records), _MS
        )
    return {k: v for k, v in named.items() if v is not None}


def coalesced_share(records: Sequence[RequestRecord]) -> float:
    """Share of good requests' events that arrived in one read with the event before them."""
    good = [r for r in records if r.ok]
    events = sum(len(r.event_times) for r in good)
    return sum(r.coalesced() for r in good) / events if events else 0.0


def ttft_upper_bound_share(records: Sequence[RequestRecord]) -> float:
    """Share of good requests whose TTFT is an upper bound (stamp shared with later bytes)."""
    good = [r for r in records if r.ok and r.event_times]
    return sum(r.ttft_upper_bound for r in good) / len(good) if good else 0.0
