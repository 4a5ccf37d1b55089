"""Results of a benchmark: one ``LevelResult`` per level, a ``BenchReport`` over them.

``BenchReport.summary()`` flattens the figures for the store and the objective: headline
keys come from the highest concurrency level (or, with only open-loop levels, the highest
rate), per-level keys are prefixed with the level's tag (``c4.output_tok_s``,
``r2p5.ttft_p99_ms`` for 2.5 req/s). A latency key is absent when no request of that level
succeeded; ``error_rate`` is over every level.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from bringup.bench.metrics import (
    Distribution,
    Interval,
    WindowFigures,
    coalesced_share,
    distributions,
    ttft_upper_bound_share,
)

LevelKind = Literal["concurrency", "rate"]

_LATENCIES = ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms")
# every figure a trial's metrics may hold (summary(), flat()); a level's tag may prefix it
METRIC_NAMES = frozenset(
    {
        "output_tok_s", "input_tok_s", "requests_s", "error_rate", "decode_tok_s_single",
        "decode_tok_s_p50", "output_tok_s_ci_lo", "output_tok_s_ci_hi", "output_tok_s_ci_n",
        "queue_p99_ms",
        "send_lateness_p99_ms",
        *(
            f"{name.removesuffix('_ms')}_{q}_ms"
            for name in _LATENCIES
            for q in ("p50", "p90", "p99", "mean")
        ),
    }
)  # fmt: skip
_LEVEL_TAG = re.compile(r"(?:c\d+|r[0-9p]+)\.")


def is_metric(name: str) -> bool:
    """``output_tok_s``, ``c4.ttft_p99_ms``: a figure the benchmark records."""
    tag = _LEVEL_TAG.match(name)
    return (name[tag.end() :] if tag else name) in METRIC_NAMES


def level_tag(kind: str, value: float) -> str:
    """``c4`` for 4 closed-loop streams, ``r2p5`` for 2.5 requests/s."""
    if kind == "concurrency":
        return f"c{int(value)}"
    return "r" + f"{value:g}".replace(".", "p")


@dataclass
class LevelMetrics:
    """Figures of one level, pooled over its repeats (distributions) or averaged (rates)."""

    latency: dict[str, Distribution]  # ttft_ms itl_ms tpot_ms e2e_ms queue_ms send_lateness_ms...
    output_tok_s: float  # mean over repeats
    input_tok_s: float
    requests_s: float
    across_repeats: dict[str, Interval]  # mean and 95% CI of per-repeat figures
    completed: int
    failed: int
    length_mismatch: int  # good requests whose output token count differs from the ask
    prompt_tokens_mean: float | None
    repeats: list[WindowFigures] = field(default_factory=list)
    retried: int = 0  # requests re-sent after the server closed an idle pooled connection
    coalesced_share: float = 0.0  # events that came in one read with the event before them
    ttft_upper_bound_share: float = 0.0  # TTFTs whose first read brought later bytes too
    arrival_clock: str = "none"  # what stamped arrivals: kernel, client or mixed

    @property
    def error_rate(self) -> float:
        total = self.completed + self.failed
        return self.failed / total if total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "latency": {k: v.to_dict() for k, v in self.latency.items()},
            "output_tok_s": self.output_tok_s,
            "input_tok_s": self.input_tok_s,
            "requests_s": self.requests_s,
            "across_repeats": {k: v.to_dict() for k, v in self.across_repeats.items()},
            "completed": self.completed,
            "failed": self.failed,
            "error_rate": self.error_rate,
            "length_mismatch": self.length_mismatch,
            "prompt_tokens_mean": self.prompt_tokens_mean,
            "retried": self.retried,
            "coalesced_share": self.coalesced_share,
            "ttft_upper_bound_share": self.ttft_upper_bound_share,
            "arrival_clock": self.arrival_clock,
            "repeats": [vars(w) for w in self.repeats],
        }


@dataclass
class LevelResult:
    kind: LevelKind
    value: float
    metrics: LevelMetrics
    samples: list[str] = field(default_factory=list)
    # with sentinels: the natural prompts, their answers beside the load and at idle
    sentinel_prompts: list[str] = field(default_factory=list)
    sentinel_answers: list[str | None] = field(default_factory=list)
    idle_answers: list[str | None] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    error_examples: dict[str, str] = field(default_factory=dict)
    # set when the stall watchdog ended streams: how many, how long, what /health said
    stall: dict[str, Any] | None = None

    @property
    def tag(self) -> str:
        return level_tag(self.kind, self.value)

    def flat(self) -> dict[str, float]:
        """This level's figures as flat keys without the tag."""
        m = self.metrics
        out: dict[str, float] = {
            "output_tok_s": m.output_tok_s,
            "input_tok_s": m.input_tok_s,
            "requests_s": m.requests_s,
            "error_rate": m.error_rate,
            "coalesced_share": m.coalesced_share,
            "ttft_upper_bound_share": m.ttft_upper_bound_share,
        }
        for name in _LATENCIES:
            dist = m.latency.get(name)
            if dist is not None:
                base = name.removesuffix("_ms")
                for q in ("p50", "p90", "p99"):
                    out[f"{base}_{q}_ms"] = getattr(dist, q)
                out[f"{base}_mean_ms"] = dist.mean
        for name in ("queue_ms", "send_lateness_ms", "client_delay_ms"):
            dist = m.latency.get(name)
            if dist is not None:
                out[f"{name.removesuffix('_ms')}_p99_ms"] = dist.p99
        decode = m.latency.get("decode_tok_s")
        if decode is not None:
            out["decode_tok_s_p50"] = decode.p50
        ci = m.across_repeats.get("output_tok_s")
        if ci is not None and ci.n > 1:
            out["output_tok_s_ci_lo"] = ci.lo
            out["output_tok_s_ci_hi"] = ci.hi
            out["output_tok_s_ci_n"] = ci.n  # repeats behind it: the interval's t quantile
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "value": self.value,
            "tag": self.tag,
            "metrics": self.metrics.to_dict(),
            "samples": list(self.samples),
            "sentinels": [
                {"prompt": p, "under_load": a, "idle": i}
                for p, a, i in zip(
                    self.sentinel_prompts, self.sentinel_answers, self.idle_answers, strict=False
                )
            ],
            "errors": dict(self.errors),
            "error_examples": dict(self.error_examples),
            "stall": self.stall,
        }


@dataclass
class BenchReport:
    levels: list[LevelResult]
    config: dict[str, Any] = field(default_factory=dict)  # BenchConfig.public()
    model: str | None = None
    tokenizer: bool = False  # prompts were cut with the server's tokenizer
    length_options: bool = False  # the server accepted ignore_eos / min_tokens
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def headline(self) -> LevelResult | None:
        """The level the unprefixed summary keys describe."""
        closed = [lv for lv in self.levels if lv.kind == "concurrency"]
        pool = closed or self.levels
        return max(pool, key=lambda lv: lv.value) if pool else None

    @property
    def output_tok_s_ci(self) -> tuple[float, float] | None:
        head = self.headline()
        ci = head.metrics.across_repeats.get("output_tok_s") if head else None
        return (ci.lo, ci.hi) if ci is not None and ci.n > 1 else None

    def decode_tok_s_single(self) -> float | None:
        """Median per-request decode rate at concurrency 1 (else the lowest concurrency)."""
        closed = sorted(
            (lv for lv in self.levels if lv.kind == "concurrency"), key=lambda lv: lv.value
        )
        for lv in closed:
            dist = lv.metrics.latency.get("decode_tok_s")
            if dist is not None:
                return dist.p50
        return None

    def errors(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for lv in self.levels:
            total.update(lv.errors)
        return dict(total)

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        head = self.headline()
        if head is not None:
            out.update(head.flat())
        done = sum(lv.metrics.completed for lv in self.levels)
        failed = sum(lv.metrics.failed for lv in self.levels)
        out["error_rate"] = failed / (done + failed) if done + failed else 0.0
        single = self.decode_tok_s_single()
        if single is not None:
            out["decode_tok_s_single"] = single
        for lv in self.levels:
            for key, value in lv.flat().items():
                out[f"{lv.tag}.{key}"] = value
        return out

    def to_dict(self) -> dict[str, Any]:
        ci = self.output_tok_s_ci
        return {
            "config": dict(self.config),
            "model": self.model,
            "tokenizer": self.tokenizer,
            "length_options": self.length_options,
            "notes": list(self.notes),
            "wall_s": self.wall_s,
            "summary": self.summary(),
            "output_tok_s_ci": list(ci) if ci else None,
            "errors": self.errors(),
            "levels": [lv.to_dict() for lv in self.levels],
        }


# A request the client got out this late, or a load whose requests lost this share of their
# cycle to the client, was not the load that was asked for: a closed loop at concurrency c
# offers c * e2e / (e2e + delay) streams, an open loop's arrivals slip by the delay.
LATE_P99_MS = 10.0
LATE_SHARE = 0.05


def load_notes(levels: list[LevelResult]) -> list[str]:
    """Notes on how arrivals were timed and on levels whose load the client did not deliver."""
    notes: list[str] = []
    clocks = {lv.metrics.arrival_clock for lv in levels} - {"none"}
    if clocks == {"kernel"}:
        notes.append("arrival times: the kernel's receive stamps (SO_TIMESTAMPNS)")
    elif clocks:
        notes.append(
            f"arrival times: {'/'.join(sorted(clocks))} — where not 'kernel', reads were stamped "
            "by the client's own clock when it got to them, so a busy client adds its delay"
        )
    for lv in levels:
        delay = lv.metrics.latency.get("client_delay_ms")
        e2e = lv.metrics.latency.get("e2e_ms")
        if delay is None:
            continue
        share = delay.mean / (delay.mean + e2e.mean) if e2e and delay.mean + e2e.mean else 0.0
        if delay.p99 > LATE_P99_MS or share > LATE_SHARE:
            notes.append(
                f"{lv.tag}: the client got requests out late (client delay p99 "
                f"{delay.p99:.1f} ms, mean {delay.mean:.2f} ms = {share:.1%} of a request's "
                "cycle): the load applied was not the load asked for"
            )
    return notes


def level_result(
    kind: LevelKind,
    value: float,
    windows: list[WindowFigures],
    records: list[Any],
    *,
    asked_tokens: int,
    samples: int,
    error_examples: dict[str, str],
    arrival_clock: str = "none",
) -> LevelResult:
    """Pool the records of every repeat of one level into its result."""
    good = [r for r in records if r.ok]
    latency = distributions(records, open_loop=kind == "rate")
    per_repeat: dict[str, list[float]] = {}
    for w in windows:
        for key in (
            "output_tok_s",
            "requests_s",
            "ttft_p50_ms",
            "itl_p50_ms",
            "tpot_p50_ms",
            "e2e_p50_ms",
        ):
            v = getattr(w, key)
            if v is not None:
                per_repeat.setdefault(key, []).append(v)
    across = {k: iv for k, vs in per_repeat.items() if (iv := Interval.of(vs)) is not None}
    prompt = [r.prompt_tokens for r in good if r.prompt_tokens is not None]
    n = len(windows) or 1
    metrics = LevelMetrics(
        latency=latency,
        output_tok_s=sum(w.output_tok_s for w in windows) / n,
        input_tok_s=sum(w.input_tok_s for w in windows) / n,
        requests_s=sum(w.requests_s for w in windows) / n,
        across_repeats=across,
        completed=len(good),
        failed=len(records) - len(good),
        length_mismatch=sum(1 for r in good if r.output_tokens != asked_tokens),
        prompt_tokens_mean=sum(prompt) / len(prompt) if prompt else None,
        repeats=windows,
        retried=sum(r.retries for r in records),
        coalesced_share=coalesced_share(records),
        ttft_upper_bound_share=ttft_upper_bound_share(records),
        arrival_clock=arrival_clock,
    )
    errors = Counter(r.error for r in records if r.error)
    kept = sorted(good, key=lambda r: r.index)[:samples]
    return LevelResult(
        kind=kind,
        value=value,
        metrics=metrics,
        samples=[r.text for r in kept],
        errors=dict(errors),
        error_examples={k: v for k, v in error_examples.items() if k in errors},
    )
