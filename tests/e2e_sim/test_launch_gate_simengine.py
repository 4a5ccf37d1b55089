"""``launch`` runs the whole gate on the simulated engine: the reference first where no
answers are stored, the stored answers after; ``probe --reference RUN`` sees a server
that drifts from them, and passes one that does not."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bringup.checks.drift_probe import run_reference_probe, stored_reference
from bringup.store import Store
from bringup.sweep import SweepOptions, launch_one, prepare
from bringup.trial import LiveServer
from bringup.verdict import Category, Stage, Status, TrialResult

from .conftest import example_spec

# the world's fp8 KV cache drifts by 0.02 nats per token; a limit under it makes it fail
STRICT_MAD = 0.005


def _launch(tmp_path: Path, store: Store, flags: dict[str, str]) -> tuple[TrialResult, LiveServer]:
    spec, _ = example_spec("vllm-attention-kv-seqs", "example_vllm_qwen3_8b_sm120", tmp_path)
    spec.checks.max_logprob_mad = STRICT_MAD
    options = SweepOptions(runs_dir=str(tmp_path / "runs"), keep_failed=True)
    result, server = asyncio.run(launch_one(prepare(spec), store, dict(flags), options))
    assert server is not None and server.process is not None, result.failure
    return result, server


def _probe(store: Store, run_id: str, server: LiveServer) -> tuple[bool, str, dict[str, object]]:
    reference, spec, _ = stored_reference(store, run_id)
    res, extra = asyncio.run(run_reference_probe(server.url, reference, spec, timeout_s=60))
    return res.passed, res.verdict, extra


def test_launch_gates_on_the_reference_and_probe_reference_sees_drift(tmp_path: Path) -> None:
    store = Store(tmp_path / "bringup.db")
    result, server = _launch(
        tmp_path, store, {"--attention-backend": "TRITON_ATTN", "--kv-cache-dtype": "fp8"}
    )
    try:
        assert result.status is Status.FAILED
        assert result.failure is not None
        assert (result.stage, result.failure.category) == (
            Stage.ACCURATE,
            Category.ACCURACY_REGRESSION,
        )
        run_id = result.trial_id.rsplit("-t", 1)[0]
        rows = store.trials(run_id)
        # no answers were stored: the reference ran first, alone, and gave them
        assert [r.purpose for r in rows] == ["reference", "launch"]
        assert rows[0].status is Status.PASSED and rows[0].checks["accuracy"]["role"] == "reference"
        passed, verdict, extra = _probe(store, run_id, server)
        assert not passed
        assert verdict.startswith("fail: drifts from the reference"), verdict
        assert "logprob MAD" in verdict
        accuracy = extra["accuracy"]
        assert isinstance(accuracy, dict) and accuracy["logprob_mad"] > STRICT_MAD
    finally:
        assert server.process is not None
        server.process.stop(5.0)

    # the second launch reuses the stored answers: one trial, judged against them
    result, server = _launch(tmp_path, store, {})
    try:
        assert result.status is Status.PASSED, result.failure
        run_id = result.trial_id.rsplit("-t", 1)[0]
        assert [r.purpose for r in store.trials(run_id)] == ["launch"]
        assert result.checks["accuracy"]["logprob_mad"] == pytest.approx(0.0, abs=1e-6)
        passed, verdict, extra = _probe(store, run_id, server)
        assert passed, verdict
        assert "matches the reference" in verdict and extra["reference_prompts"] == 4
    finally:
        assert server.process is not None
        server.process.stop(5.0)
