"""The local executor two trials at a time on one (simulated) device: start-ups overlap,
checks and benchmarks take turns, and the verdicts are the world's."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bringup.errors import SpecError
from bringup.executors.local import LocalExecutor
from bringup.server.devicelock import DeviceLocks, Held, Turn
from bringup.store import Store
from bringup.sweep import RunRecorder, SweepOptions, local_executor, prepare, run_sweep
from bringup.verdict import Status

from .conftest import example_spec, world_verdict

pytestmark = pytest.mark.slow


@dataclass
class RecordingLocks(DeviceLocks):
    spans: list[tuple[str, float, float]] = field(default_factory=list)

    async def turn(self, turn: Turn, on_wait: Callable[[], None] | None = None) -> Held:
        held = await super().turn(turn, on_wait)
        start = time.monotonic()
        release = held.release

        def recorded() -> None:
            if held.fd is not None:
                self.spans.append((turn, start, time.monotonic()))
            release()

        held.release = recorded  # type: ignore[method-assign]
        return held


def test_two_at_a_time_take_turns_for_measuring_and_keep_the_verdicts(tmp_path: Path) -> None:
    spec, world = example_spec("vllm-attention-kv-seqs", "example_vllm_qwen3_8b_sm120", tmp_path)
    spec.plan.planner = "grid"
    spec.plan.max_in_flight = 2
    locks = RecordingLocks(tmp_path / "locks")

    def factory(rec: RunRecorder, options: SweepOptions) -> LocalExecutor:
        executor = local_executor(rec, options)
        assert isinstance(executor, LocalExecutor) and executor.capacity == 2
        assert executor.device is not None  # more than one at a time: turns are on
        executor.device = locks
        return executor

    store = Store(tmp_path / "bringup.db")
    options = SweepOptions(runs_dir=str(tmp_path / "runs"))
    outcome = asyncio.run(run_sweep(prepare(spec), store, options, executor=factory))

    decided = [r for r in outcome.results if r.status in (Status.PASSED, Status.FAILED)]
    assert len(decided) == len(spec.configs())
    for result in decided:
        truth = world_verdict(world, spec, result.flags)
        got = result.failure.category if result.failure else None
        assert got == truth.category, (result.flags, got, truth.category)
    measuring = sorted((a, b) for turn, a, b in locks.spans if turn == "measuring")
    assert len(measuring) >= 2
    for (_, end), (start, _) in itertools.pairwise(measuring):
        assert start >= end, "two trials were checked or measured at the same time"
    rows = store.trials(outcome.run_id)
    spans = sorted((row.started, row.updated) for row in rows)
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans)), "no two trials overlapped"
    assert outcome.winner is not None


def test_a_pinned_port_with_two_at_a_time_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    spec, _ = example_spec("vllm-attention-kv-seqs", "example_vllm_qwen3_8b_sm120", tmp_path)
    spec.plan.max_in_flight = 2
    spec.launch.port = 18123
    store = Store(tmp_path / "bringup.db")
    with pytest.raises(SpecError, match="pins one port"):
        asyncio.run(run_sweep(prepare(spec), store, SweepOptions(runs_dir=str(tmp_path / "r"))))
