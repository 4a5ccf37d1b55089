"""Stages, verdict categories and the result of one trial.

A trial walks ``planned -> launching -> ready -> identified -> correct -> accurate ->
benchmarked -> passed``; any stage may end it as ``failed`` with a category, the log lines
that decided it and, where one is known, a remedy. ``interrupted`` means bringup itself was
stopped; such a trial is re-run on resume. ``unchecked``: nothing failed, but the accuracy
check could not run because the reference configuration failed.
"""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, Field

from bringup.contention import Contention


class Stage(enum.StrEnum):
    PLANNED = "planned"
    LAUNCHING = "launching"
    READY = "ready"
    IDENTIFIED = "identified"
    CORRECT = "correct"
    ACCURATE = "accurate"
    BENCHMARKED = "benchmarked"
    PASSED = "passed"


class Status(enum.StrEnum):
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    SKIPPED = "skipped"  # pruned by the planner or already decided in the store
    # every stage it could run passed, but accuracy was not judged (no reference answers):
    # not a winner, and never shown as passed
    UNCHECKED = "unchecked"


class Category(enum.StrEnum):
    # launch / runtime failures (same labels as the failure corpus)
    OOM_GPU = "oom_gpu"
    OOM_HOST = "oom_host"
    UNSUPPORTED_HARDWARE = "unsupported_hardware"
    INVALID_CONFIG = "invalid_config"
    MODEL_INCOMPATIBLE = "model_incompatible"
    MISSING_DEPENDENCY = "missing_dependency"
    DISTRIBUTED_FAILURE = "distributed_failure"
    PORT_IN_USE = "port_in_use"
    MODEL_LOAD_FAILURE = "model_load_failure"
    STARTUP_TIMEOUT_OR_HANG = "startup_timeout_or_hang"
    GARBAGE_OUTPUT = "garbage_output"
    RUNTIME_CRASH = "runtime_crash"
    # check failures
    WRONG_ANSWER = "wrong_answer"
    ACCURACY_REGRESSION = "accuracy_regression"
    ERRORS_UNDER_LOAD = "errors_under_load"
    # a request got no answer while the engine lived (bringup.server.progress): transient
    SLOW_RESPONSE = "slow_response"  # still working (CPU used, log growing): slower only
    STALLED = "stalled"  # alive but no progress over the sampled window


LAUNCH_CATEGORIES: tuple[Category, ...] = tuple(Category)[:12]


class Failure(BaseModel):
    """Why a trial failed: where, what kind, the decisive evidence and what to try.

    From a log, the classifier also says which rule decided (``rule``), how sure it is and
    which flags that rule implicates; the pruner reads ``flags`` before the evidence text.
    """

    stage: Stage
    category: Category
    evidence: list[str] = Field(default_factory=list)
    remedy: str | None = None
    detail: str | None = None  # one human sentence, e.g. "process exited with code 1"
    # an accident of the moment (a timeout on a loaded machine, a reset connection), not
    # a property of the configuration: retried once, never prunes, never reused
    transient: bool = False
    rule: str | None = None  # id of the deciding rule, e.g. "llama.cpp:quantized V cache"
    confidence: float | None = None  # the classifier's, 0..1 (None: not from a log)
    flags: list[str] = Field(default_factory=list)  # flags the deciding rule implicates

    def headline(self) -> str:
        return failure_headline(self.category, self.evidence, self.detail)


def failure_headline(category: Category, evidence: list[str], detail: str | None) -> str:
    """One line for a failure: its category and first evidence line (or its detail)."""
    line = evidence[0] if evidence else (detail or "")
    return f"{category.value}: {line}".strip().rstrip(":")


def stored_interval(metrics: dict[str, Any], name: str) -> tuple[float, float] | None:
    """``name``'s 95% interval as the benchmark stores it (``<name>_ci_lo`` / ``_ci_hi``)."""
    lo, hi = metrics.get(f"{name}_ci_lo"), metrics.get(f"{name}_ci_hi")
    if isinstance(lo, int | float) and isinstance(hi, int | float):
        return float(lo), float(hi)
    return None


class TrialResult(BaseModel):
    """Everything recorded about one trial; written to the store as it progresses."""

    trial_id: str
    flags: dict[str, Any]
    status: Status = Status.RUNNING
    stage: Stage = Stage.PLANNED
    failure: Failure | None = None
    command: list[str] = Field(default_factory=list)
    host: str | None = None  # where the server listens, as launched
    port: int | None = None
    health_path: str | None = None  # what readiness polled, as launched
    pid: int | None = None
    log_path: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)  # stage name -> seconds
    metrics: dict[str, Any] = Field(default_factory=dict)
    checks: dict[str, Any] = Field(default_factory=dict)
    chosen: dict[str, str] = Field(default_factory=dict)  # what the engine actually picked
    note: str | None = None
    # the CPU left to the trial: windows "trial" and, when it ran, "benchmark"
    contention: dict[str, Contention] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    def interval(self, name: str) -> tuple[float, float] | None:
        """The 95% interval the benchmark stored for metric ``name`` (over its repeats)."""
        return stored_interval(self.metrics, name)

    def fail(
        self,
        stage: Stage,
        category: Category,
        evidence: list[str] | None = None,
        remedy: str | None = None,
        detail: str | None = None,
        transient: bool = False,
    ) -> TrialResult:
        return self.fail_with(
            Failure(
                stage=stage,
                category=category,
                evidence=evidence or [],
                remedy=remedy,
                detail=detail,
                transient=transient,
            )
        )

    def fail_with(self, failure: Failure) -> TrialResult:
        """Record ``failure`` (a classifier's, with its rule and flags) as the verdict."""
        self.status = Status.FAILED
        self.failure = failure
        return self
