"""Streaming benchmark of an OpenAI-compatible server, timed on receipt.

``await run_benchmark(base_url, BenchConfig(...))`` (or ``run_benchmark_sync``) returns a
``BenchReport``: one ``LevelResult`` per concurrency level (closed loop) and request rate
(open loop), with TTFT, per-token ITL, TPOT, E2E, queue time and send lateness
distributions, throughput with its interval across repeats, errors by kind and sample
outputs; ``summary()`` flattens it for the store and the objective.
"""

from bringup.bench.config import BenchConfig
from bringup.bench.metrics import Distribution, Interval, WindowFigures
from bringup.bench.records import RequestRecord, parse_stream
from bringup.bench.report import BenchReport, LevelMetrics, LevelResult
from bringup.bench.runner import run_benchmark, run_benchmark_sync
from bringup.bench.workers import run_on_fast_loop

__all__ = [
    "BenchConfig",
    "BenchReport",
    "Distribution",
    "Interval",
    "LevelMetrics",
    "LevelResult",
    "RequestRecord",
    "WindowFigures",
    "parse_stream",
    "run_benchmark",
    "run_benchmark_sync",
    "run_on_fast_loop",
]
