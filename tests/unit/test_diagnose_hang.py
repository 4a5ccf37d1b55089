"""Hang diagnosis: the phase the engine reached and the last lines before silence."""

from __future__ import annotations

import pytest

from bringup.diagnose import diagnose_hang, stage_reached
from bringup.verdict import Category, Stage


@pytest.mark.parametrize(
    ("last_line", "phase"),
    [
        (
            "[2025-10-06 20:05:22 TP0] Capture cuda graph begin. This can take several minutes.",
            "capturing CUDA graphs",
        ),
        (
            "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  23%|##",
            "capturing CUDA graphs",
        ),
        ("[2025-11-02 09:00:04 TP0] Load weight begin. avail mem=78.52 GB", "loading weights"),
        ("Loading safetensors checkpoint shards:  45% Completed | 9/20", "loading weights"),
        (
            "[2025-06-23 15:07:01 TP6] Connecting to tcp://127.0.0.1:57063",
            "connecting to peers (distributed init)",
        ),
        (
            "host:1:1 [0] NCCL INFO Bootstrap : Using eno1:10.0.0.1<0>",
            "connecting to peers (distributed init)",
        ),
        (
            "INFO 01-01 00:00:00 [backends.py:1] Compiling a graph for dynamic shape takes 40 s",
            "compiling (torch.compile / JIT kernels)",
        ),
        ("INFO:     Waiting for application startup.", "starting the HTTP server"),
    ],
)
def test_phase_of_last_marker(last_line: str, phase: str) -> None:
    lines = ["some banner", "INFO 01-01 00:00:00 [x.py:1] version 1.0", last_line]
    assert stage_reached(lines)[0] == phase


def test_hang_evidence_names_phase_and_tail() -> None:
    log = "\n".join(
        ["[2025-10-06 20:05:22 DP0 TP0] Capture cuda graph begin. avail mem=3.66 GB"]
        + [
            f"[2025-10-06 20:05:27 DP{r} TP{r}] Registering 0 cuda graph addresses"
            for r in range(8)
        ]
    )
    d = diagnose_hang(log, "sglang", silent_s=300)
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert d.evidence[0] == "stage reached: capturing CUDA graphs"
    assert d.evidence[-1].endswith("Registering 0 cuda graph addresses")
    # the eight ranks' identical lines collapse into one
    assert sum("Registering" in e for e in d.evidence) == 1
    assert d.remedy and "cuda-graph" in d.remedy
    assert "300" in d.explain()
    failure = d.to_failure(Stage.READY)
    assert failure.detail == "no progress while capturing CUDA graphs"


def test_silent_engine() -> None:
    d = diagnose_hang("", "vllm")
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert d.stage_reached is None
    assert d.evidence == ["(the engine printed nothing)"]
