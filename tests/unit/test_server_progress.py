"""Request timeouts from measured speed; what a request without an answer means."""

from __future__ import annotations

from bringup.server.progress import (
    FIRST_LOOK_TIMEOUT_S,
    MIN_TIMEOUT_S,
    TIMEOUT_MARGIN,
    Progress,
    judge_no_answer,
    request_failure_kind,
    request_timeout_s,
)
from bringup.verdict import Category


def test_timeout_follows_the_measured_decode_rate() -> None:
    # 64 tokens at 4 tok/s take 16 s: ten times that is the wait
    assert request_timeout_s(64, 4.0) == TIMEOUT_MARGIN * 16
    # a fast engine still gets the floor, an unmeasured one the first-look wait
    assert request_timeout_s(8, 1000.0) == MIN_TIMEOUT_S
    assert request_timeout_s(64, None) == FIRST_LOOK_TIMEOUT_S
    assert request_timeout_s(64, 0.0) == FIRST_LOOK_TIMEOUT_S
    assert request_timeout_s(64, 2.0) > request_timeout_s(64, 4.0)


def test_kinds_of_no_answer() -> None:
    assert request_failure_kind("POST /v1/completions: no response (timed out)") == "timeout"
    assert request_failure_kind("POST /v1/completions: no response (Connection reset)") == (
        "connection"
    )
    assert request_failure_kind("POST /v1/completions answered 503: busy") == "server_error"
    assert request_failure_kind("POST /v1/completions answered non-JSON: 'x'") == "other"


def test_progress_decides_slow_or_stalled_and_5xx_is_a_crash() -> None:
    working = Progress(cpu_s=1.5, log_bytes=0, window_s=2.0)
    idle = Progress(cpu_s=0.0, log_bytes=0, window_s=2.0)
    logging = Progress(cpu_s=0.0, log_bytes=120, window_s=2.0)
    assert judge_no_answer("timeout", working)[:2] == (Category.SLOW_RESPONSE, True)
    assert judge_no_answer("timeout", logging)[:2] == (Category.SLOW_RESPONSE, True)
    assert judge_no_answer("timeout", idle)[:2] == (Category.STALLED, True)
    assert judge_no_answer("connection", idle)[:2] == (Category.STALLED, True)
    assert judge_no_answer("server_error", working)[:2] == (Category.RUNTIME_CRASH, False)
    assert judge_no_answer("other", working)[:2] == (Category.RUNTIME_CRASH, False)
