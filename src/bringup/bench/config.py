"""What one benchmark run does: levels, lengths, bounds, endpoint.

``BenchConfig`` is a plain dataclass so it pickles into worker processes; build it from a
spec's ``[bench]`` table with :meth:`BenchConfig.from_spec` (``scale < 1`` shrinks request
counts and durations for the short benchmark of successive halving).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from bringup.spec import BenchSpec

Arrival = Literal["poisson", "constant"]
Endpoint = Literal["completions", "chat"]


@dataclass
class BenchConfig:
    """One benchmark: closed-loop levels (``concurrency``) then open-loop levels (``request_rate``).

    ``requests`` and ``warmup`` are per level and per repeat; a closed-loop level runs at
    least twice its concurrency (:meth:`requests_at`), so that it holds that many requests
    in flight for more than one wave. ``duration_s``, when set, bounds each measured window
    instead of the request count. ``max_concurrency``
    caps in-flight requests of open-loop levels; time spent waiting for that cap is reported
    as queue time. ``processes`` > 1 splits each level over that many client processes.
    """

    concurrency: list[int] = field(default_factory=lambda: [1])
    request_rate: list[float] = field(default_factory=list)
    arrival: Arrival = "poisson"
    input_tokens: int = 128
    output_tokens: int = 64
    requests: int = 16
    warmup: int = 1
    duration_s: float | None = None
    repeats: int = 1
    endpoint: Endpoint = "completions"
    model: str | None = None
    timeout_s: float = 300.0
    sample_outputs: int = 4
    api_key: str | None = field(default=None, repr=False)
    # beyond the core contract
    ignore_eos: bool = True  # ask the engine to produce exactly output_tokens
    max_concurrency: int | None = None  # cap for open-loop levels; None = unbounded
    processes: int = 1
    seed: int = 0
    temperature: float = 0.0
    # natural prompts answered beside the load at every level (see bench.sentinels)
    sentinels: tuple[str, ...] = ()
    sentinel_tokens: int = 8
    # the stall watchdog (see bench.stall): silence beyond factor x the idle ITL is a stall
    stall_watchdog: bool = True
    stall_factor: float = 20.0
    stall_floor_s: float = 5.0
    # a silent stream whose engine is still working waits this many watchdog limits
    stall_slow_factor: float = 10.0
    health_path: str = "/health"  # asked once a stream stalled: hang (200) or down
    # the engine's process and log, where the caller started it: a stall is judged by
    # whether it kept working meanwhile (server.progress.ProgressMeter)
    engine_pid: int | None = None
    engine_log: str | None = None

    def __post_init__(self) -> None:
        if any(c < 1 for c in self.concurrency):
            raise ValueError("every concurrency level must be at least 1")
        if any(r <= 0 or not math.isfinite(r) for r in self.request_rate):
            raise ValueError("every request rate must be a positive number of requests/s")
        if not self.concurrency and not self.request_rate:
            raise ValueError("give at least one concurrency level or request rate")
        if self.input_tokens < 1 or self.output_tokens < 1:
            raise ValueError("input_tokens and output_tokens must be at least 1")
        if self.requests < 1 or self.repeats < 1 or self.warmup < 0 or self.processes < 1:
            raise ValueError("requests, repeats and processes must be >= 1, warmup >= 0")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError("duration_s must be positive when set")

    def requests_at(self, concurrency: int) -> int:
        """Requests of a closed-loop level: ``requests``, raised to twice ``concurrency``.

        With fewer requests than streams a "c64" level would never have 64 in flight, and
        its figures would describe a lower concurrency under the higher one's name.
        """
        return max(self.requests, 2 * concurrency)

    @classmethod
    def from_spec(
        cls, bench: BenchSpec, *, model: str | None, scale: float = 1.0, **overrides: object
    ) -> BenchConfig:
        """The spec's ``[bench]`` table as a config; ``scale`` shrinks requests and duration."""
        if not 0 < scale <= 1:
            raise ValueError("scale must be in (0, 1]")
        requests = max(1, math.ceil(bench.requests * scale))
        duration = None if bench.duration_s is None else bench.duration_s * scale
        cfg = cls(
            concurrency=list(bench.concurrency),
            request_rate=list(bench.request_rate),
            arrival=bench.arrival,
            input_tokens=bench.input_tokens,
            output_tokens=bench.output_tokens,
            requests=requests,
            warmup=bench.warmup,
            duration_s=duration,
            repeats=bench.repeats,
            endpoint=bench.endpoint,
            model=model,
        )
        return replace(cfg, **overrides) if overrides else cfg  # type: ignore[arg-type]

    def public(self) -> dict[str, object]:
        """The config as JSON-able data, without the API key."""
        return {
            "concurrency": list(self.concurrency),
            "request_rate": list(self.request_rate),
            "arrival": self.arrival,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "requests": self.requests,
            "warmup": self.warmup,
            "duration_s": self.duration_s,
            "repeats": self.repeats,
            "endpoint": self.endpoint,
            "model": self.model,
            "timeout_s": self.timeout_s,
            "ignore_eos": self.ignore_eos,
            "max_concurrency": self.max_concurrency,
            "processes": self.processes,
            "seed": self.seed,
        }
