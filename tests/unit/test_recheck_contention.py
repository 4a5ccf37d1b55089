"""A recheck run while others took more of the CPU than during the stored benchmark: the
slowdown that excess explains is not a regression of the configuration. A TTFT of a few
milliseconds may move by one engine step for the arrival's phase alone."""

from __future__ import annotations

from bringup.contention import Contention
from bringup.recheck import compare_figures, excess_contention


def _taken(share: float) -> dict[str, Contention]:
    """A benchmark window of 10 s on 2 cores in which others took ``share`` of the machine."""
    window = Contention(
        window="benchmark",
        wall_s=10.0,
        cores=2,
        others_cpu_s=20.0 * share,
        steal_s=0.0,
        ours_cpu_s=5.0,
        load1=1.0,
    )
    return {"benchmark": window}


BEFORE = {"output_tok_s": 100.0, "ttft_p50_ms": 100.0}


def _by_name(before: dict[str, float], after: dict[str, float], busier: float) -> dict[str, bool]:
    return {f.name: f.regressed for f in compare_figures(before, after, busier)}


def test_the_excess_is_the_new_share_beyond_the_stored_one() -> None:
    assert abs(excess_contention(_taken(0.1), _taken(0.4)) - 0.3) < 1e-9
    assert excess_contention(_taken(0.4), _taken(0.1)) == 0.0  # quieter now: no allowance
    assert excess_contention({}, _taken(0.4)) == 0.0  # the stored one was not measured


def test_a_slowdown_the_excess_explains_is_noise() -> None:
    # 35% slower beside others taking 30% more: at most 0.65 / 0.70 - 1 = -7% when quiet
    after = {"output_tok_s": 65.0, "ttft_p50_ms": 140.0}
    assert _by_name(BEFORE, after, 0.0) == {"output_tok_s": True, "ttft_p50_ms": True}
    assert _by_name(BEFORE, after, 0.3) == {"output_tok_s": False, "ttft_p50_ms": False}
    line = compare_figures(BEFORE, after, 0.3)[0].line()
    assert "30% more CPU taken by others" in line and line.endswith("noise")


def test_a_slowdown_beyond_what_the_excess_explains_is_still_a_regression() -> None:
    # half the speed beside 10% more taken: at best 0.5 / 0.9 = -44%, beyond the 20% band
    after = {"output_tok_s": 50.0, "ttft_p50_ms": 200.0}
    assert _by_name(BEFORE, after, 0.1) == {"output_tok_s": True, "ttft_p50_ms": True}
    assert compare_figures(BEFORE, after, 0.1)[0].line().endswith("REGRESSION")


def test_a_ttft_of_milliseconds_may_move_by_one_engine_step() -> None:
    before = {"ttft_p50_ms": 13.0, "tpot_p50_ms": 18.0}
    # +30% is 3.9 ms: less than one 18 ms step beyond the 20% band
    assert not _by_name(before, {"ttft_p50_ms": 16.9}, 0.0)["ttft_p50_ms"]
    # beyond the band by more than one step: a regression
    assert _by_name(before, {"ttft_p50_ms": 34.0}, 0.0)["ttft_p50_ms"]
    # without a stored step time, the band alone decides
    assert _by_name({"ttft_p50_ms": 13.0}, {"ttft_p50_ms": 16.9}, 0.0) == {"ttft_p50_ms": True}
