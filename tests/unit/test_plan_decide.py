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


def _why_it_stopped(steps: Any, failure: str) -> str:
    """The sentence the decide phase returns when it ends at its next step."""
    try:
        next(steps)
    except StopIteration as stop:
        return str(stop.value)
    raise AssertionError(failure)


def test_a_significant_lead_on_one_measurement_is_measured_again() -> None:
    fake = _Fake()
    steps = decide_steps(cast(SweepPlanner, fake), [], cap=3)
    first = next(steps)
    assert isinstance(first, PlannedTrial)
    assert first.config == LEADER and first.purpose == "repeat"
    # measured twice now and still ahead: decided, nothing more
    fake.winner.leader = (LEADER, 2)
    assert "1 to confirm a leader measured once" in _why_it_stopped(
        steps, "decide_steps went on after the lead was confirmed"
    )


def _undecided(fake: _Fake, n_lead: int, n_other: int) -> None:
    fake.winner.leader = (LEADER, n_lead)
    fake.winner.margin = (2.0, 5.0)
    fake.winner.undecided = [(OTHER, n_other)]


def test_the_less_measured_of_two_undecided_is_measured_again() -> None:
    fake = _Fake()
    _undecided(fake, 3, 3)
    steps = decide_steps(cast(SweepPlanner, fake), [], cap=6, budget=10)
    # as many measurements each: both
    first = [next(steps), next(steps)]
    assert [t.config for t in first if isinstance(t, PlannedTrial)] == [LEADER, OTHER]
    _undecided(fake, 4, 3)
    nxt = next(steps)
    assert isinstance(nxt, PlannedTrial) and nxt.config == OTHER
    _undecided(fake, 4, 5)
    nxt = next(steps)
    assert isinstance(nxt, PlannedTrial) and nxt.config == LEADER
    # decided: the phase ends
    fake.winner.undecided = []
    assert "ranking decided" in _why_it_stopped(
        steps, "decide_steps went on after the ranking was decided"
    )


def test_undecided_repeats_stop_at_the_budget() -> None:
    fake = _Fake()
    _undecided(fake, 2, 2)
    steps = decide_steps(cast(SweepPlanner, fake), [], cap=6, budget=3)
    got = [next(steps), next(steps)]
    _undecided(fake, 3, 3)
    got.append(next(steps))  # one of two left in the budget
    assert all(isinstance(t, PlannedTrial) for t in got)
    _undecided(fake, 4, 3)
    assert "plan.max_repeats" in _why_it_stopped(steps, "decide_steps went past its budget")


def test_repeat_budget_is_a_share_of_the_space() -> None:
    from bringup.plan.decide import repeat_budget

    assert repeat_budget(1000, 6, None) == 150
    assert repeat_budget(12, 6, None) == 12  # at least two configurations' worth
    assert repeat_budget(1000, 6, 5) == 5
