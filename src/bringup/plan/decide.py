"""The default planner's last phase: measure again until the winner is decided.

Exploration measures each configuration once. On a machine whose run-to-run noise is a few
percent, a single lucky draw can then win, and two configurations a few percent apart
cannot be told apart; this phase measures again where that could change the choice:

1. ``[plan].repeat_top = k``: the best ``k`` first get a second measurement each.
2. **Confirmation.** A leader measured once, with nothing measured twice yet to say how
   noisy the machine is, is measured again: that checks a surprising lead and gives the
   first measured noise (:func:`bringup.plan.winner.run_noise`), without which no
   runner-up can be compared with it. The reference leading is no exception: a
   departure a hair behind it is as undecided as one a hair ahead.
3. **Until decided.** While the winner's ``undecided`` list (configurations the best one
   is not significantly ahead of by Welch's test at 95%, each side's variance its own
   moderated by the machine's pooled noise, and not surely within
   :data:`~bringup.plan.winner.EQUIVALENT`) is not empty, the less-measured of the
   best-measured configuration and the closest undecided one is measured again (both
   when they have as many measurements), each up to ``[plan].max_samples`` full
   measurements (and as many launches, since a repeat that fails adds none), and all
   such repeats together up to a budget (``[plan].max_repeats``; by default a share of
   the space, :data:`REPEAT_SHARE`, at least two configurations' worth). The phase stops
   when nothing is undecided, nothing undecided may be measured again, or the budget is
   spent; the winner's own rule (:func:`~bringup.plan.winner.choose_winner`) then chooses.

Repeats count against the sweep's budget like any trial. The phase returns one sentence
saying what it added and why it stopped, for the winner's note.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

from bringup.plan.base import WAIT, PlannedTrial, SweepPlanner
from bringup.plan.space import flags_key
from bringup.spec import Config

DecideSteps = Generator[PlannedTrial | None, None, str]

# Repeats to decide the winner, at most, as a share of the space's configurations (where
# ``[plan].max_repeats`` is unset): enough for a few close contenders to reach
# ``max_samples`` each in a large space, a small part of what exploring it costs.
REPEAT_SHARE = 0.15


def repeat_budget(configs: int, cap: int, max_repeats: int | None) -> int:
    """The repeats the until-decided step may launch in all (module docstring)."""
    if max_repeats is not None:
        return max_repeats
    return max(2 * cap, math.ceil(REPEAT_SHARE * configs))


def decide_steps(
    planner: SweepPlanner, first: list[Config], cap: int, budget: int | None = None
) -> DecideSteps:
    """Repeats of ``first``, confirmation, then repeats until decided (module docstring):
    at most ``cap`` measurements of one configuration and, after ``first``, at most
    ``budget`` repeats in all (None: no limit but ``cap``)."""
    launched: dict[Any, int] = {}
    confirmed = 0
    added = 0
    adaptive = 0

    def again(config: Config) -> PlannedTrial:
        nonlocal added
        added += 1
        key = flags_key(config)
        launched[key] = launched.get(key, 0) + 1
        return PlannedTrial(dict(config), "repeat", 1.0)

    def may(config: Config, samples: int) -> bool:
        return samples < cap and launched.get(flags_key(config), 0) < cap

    measured = _full_measurements(planner)
    for config in first:
        if measured.get(flags_key(config), 0) < 2:
            yield again(config)
    while planner.in_flight:
        yield WAIT
    why = "ranking decided"
    while True:
        winner = planner.best()
        if winner is None or winner.leader is None:
            break
        leader, n_lead = winner.leader
        picks: list[Config] = []
        if n_lead == 1 and winner.margin is not None and may(leader, 1):
            # a lead on one measurement may be a lucky draw (and says nothing of how the
            # configuration wanders): it is measured again before it wins
            confirmed += 1
            picks.append(leader)
        elif winner.noise is not None and winner.undecided:
            closest = next(((c, n) for c, n in winner.undecided if may(c, n)), None)
            picks = _less_sampled((leader, n_lead) if may(leader, n_lead) else None, closest)
        if picks and budget is not None and adaptive + len(picks) > budget:
            picks = picks[: max(0, budget - adaptive)]
            if not picks:
                why = (
                    f"still within noise after {adaptive} repeat(s), the budget "
                    "(plan.max_repeats); the winner's rule chose among them"
                )
                break
        if not picks:
            if winner.undecided:
                why = (
                    f"still within noise at {cap} measurements (plan.max_samples); "
                    "the winner's rule chose among them"
                )
            break
        for config in picks:
            adaptive += 1
            yield again(config)
        while planner.in_flight:
            yield WAIT
    if not added:
        return ""
    parts = [f"measured {added} more time(s)"]
    if confirmed:
        parts.append(f"{confirmed} to confirm a leader measured once")
    return ", ".join(parts) + f"; {why}"


def _less_sampled(
    leader: tuple[Config, int] | None, challenger: tuple[Config, int] | None
) -> list[Config]:
    """Which of the leader and its closest undecided challenger (each None where it may not
    be measured again) to measure next: the one with fewer measurements, whose standard
    error a repeat shrinks most; both when they have as many."""
    if leader is None or challenger is None:
        return [x[0] for x in (leader, challenger) if x is not None]
    if leader[1] == challenger[1]:
        return [leader[0], challenger[0]]
    return [min(leader, challenger, key=lambda x: x[1])[0]]


def _full_measurements(planner: SweepPlanner) -> dict[Any, int]:
    """Per configuration, how many full benchmarks of it passed."""
    out: dict[Any, int] = {}
    for planned, result in planner.observed():
        if result.passed and planned.bench_scale >= 1.0:
            key = flags_key(planned.config)
            out[key] = out.get(key, 0) + 1
    return out
