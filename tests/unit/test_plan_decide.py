"""The default planner's last phase: a leader measured once is measured again first."""

from __future__ import annotations

from typing import Any, cast

from bringup.plan.base import PlannedTrial, SweepPlanner
from bringup.plan.decide import decide_steps
from bringup.plan.winner import Winner

LEADER = {"--flash-attn": "on"}
OTHER = {"--flash-attn": "off"}


class _Fake:
    """Just what decide_steps reads of a planner: a winner whose lead is decided (the
    machine's noise is measured, nothing undecided) but rests on one measurement."""

    in_flight = 0

    def __init__(self) -> None:
        self.winner = Winner(
            trial_id="t2",
            config=LEADER,
            value=130.0,
            interval=(120.0, 140.0),
            reason="highest",
            margin=(30.0, 8.0),
            undecided=[],
            leader=(LEADER, 1),
            noise=(0.03, 4),
        )

    def best(self) -> Winner:
        return self.winner

    def observed(self) -> list[tuple[PlannedTrial, Any]]:
        return []


def test_a_significant_lead_on_one_measurement_is_measured_again() -> None:
    fake = _Fake()
    steps = decide_steps(cast(SweepPlanner, fake), [], cap=3)
    first = next(steps)
    assert isinstance(first, PlannedTrial)
    assert first.config == LEADER and first.purpose == "repeat"
    # measured twice now and still ahead: decided, nothing more
    fake.winner.leader = (LEADER, 2)
    try:
        next(steps)
    except StopIteration as stop:
        assert "1 to confirm a leader measured once" in str(stop.value)
    else:
        raise AssertionError("decide_steps went on after the lead was confirmed")
