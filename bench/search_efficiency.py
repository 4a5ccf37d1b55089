"""Search efficiency of the planners on simulated worlds (no processes launched).

Runs every planner on the shipped seed worlds (or on ``--world FILE``, repeatable) and on
``--random N`` seeded random worlds (of ``--family``: ``random``, or the same seeds with
load added, ``load-failures`` / ``load-scaling``, as ``bench/decision_quality.py`` names
them), with the analytic evaluator of the simulated engine.
Per world and planner it prints launches, simulated wall time and whether the planner's
winner is the grid's winner or within measurement noise of it (true objective at least
the grid winner's minus two noise standard deviations, requirements met).

Beside it, over ``--seeds`` noise seeds per world (the first is the world's own, as
above), how often each planner's winner is the true best (its true objective within
``--tol`` of the best configuration that passes every check and meets the requirements,
as ``bench/decision_quality.py`` counts it) and its mean regret (true shortfall; 1 for no
winner): "same as grid" says nothing when the grid itself is fooled by noise.

Last line: ``default_launch_ratio=<float> same_winner_rate=<float> true_best_rate=<float>
mean_regret=<float>`` (default planner's launches over the grid's, averaged over worlds;
share of worlds where it found the grid's winner or one within noise; the default
planner's true-best rate and mean regret over every world and seed).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from dataclasses import dataclass
from typing import Any

from bringup.plan import choose_winner, make_planner
from bringup.plan.space import flags_key
from bringup.plan.winner import requirement_failures
from bringup.testing.simengine import World, evaluate, load_world, shipped_worlds
from bringup.testing.simengine.generator import FAMILIES, family_world
from bringup.verdict import TrialResult
from decision_quality import Truth, truth  # the same truth decision_quality.py scores by


@dataclass
class Run:
    launches: int
    seconds: float
    winner: dict[str, Any] | None
    pruned: int


def run_planner(world: World, name: str, seed: int, halving: bool = False) -> Run:
    spec = world.to_spec()
    if halving:
        spec.plan.halving = True
    planner = make_planner(spec, name)
    rng = random.Random(seed)
    results: list[TrialResult] = []
    seconds = 0.0
    gen = planner.plan()
    try:
        item = next(gen)
        while True:
            sim = evaluate(
                world, item.config, rng, item.bench_scale, trial_id=f"t{len(results) + 1}"
            )
            seconds += sim.seconds
            results.append(sim.result)
            item = gen.send(sim.result)
    except StopIteration:
        pass
    win = choose_winner(results, spec)
    return Run(len(results), seconds, win.config if win else None, len(planner.pruned))


def true_value(world: World, config: dict[str, Any] | None) -> float | None:
    if config is None:
        return None
    return world.true_output_tok_s(config)


def same_winner(world: World, grid: Run, other: Run) -> bool:
    if grid.winner is None or other.winner is None:
        return grid.winner is None and other.winner is None
    if flags_key(grid.winner) == flags_key(other.winner):
        return True
    g, o = true_value(world, grid.winner), true_value(world, other.winner)
    assert g is not None and o is not None
    spec = world.to_spec()
    ttft = world.true_ttft_ms(other.winner)
    metrics = {
        "ttft_p50_ms": ttft,
        "ttft_p99_ms": ttft * world.performance.ttft_tail,
        "output_tok_s": o,
    }
    if requirement_failures(metrics, spec.objective.require):
        return False
    return o >= g * (1 - 2 * world.performance.noise)


def _regret(world: World, t: Truth, winner: dict[str, Any] | None) -> float:
    """The true shortfall of ``winner`` (1 for none), as decision_quality.py counts it."""
    return t.regret(world, winner)


def _rate(regrets: list[float], tol: float) -> float:
    return sum(r <= tol for r in regrets) / max(1, len(regrets))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", action="append", default=[], help="a world file (repeatable)")
    ap.add_argument("--random", type=int, default=50, help="how many seeded random worlds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=3, help="noise seeds per world for true best")
    ap.add_argument("--tol", type=float, default=0.01, help="regret still counted as true best")
    ap.add_argument("--family", choices=FAMILIES, default="random", help="random worlds' family")
    ap.add_argument("--quiet", action="store_true", help="only the summary lines")
    args = ap.parse_args(argv)

    worlds: list[World] = [load_world(w) for w in args.world] or [
        load_world(p) for p in shipped_worlds()
    ]
    worlds += [family_world(args.family, args.seed + i) for i in range(args.random)]
    variants = [
        ("grid", "grid", False),
        ("default", "default", False),
        ("default+halving", "default", True),
    ]
    ratios: list[float] = []
    same: list[bool] = []
    totals: dict[str, list[float]] = {label: [0, 0.0, 0] for label, _, _ in variants}
    regrets: dict[str, list[float]] = {label: [] for label, _, _ in variants}
    for i, world in enumerate(worlds):
        t = truth(world, args.tol)
        runs = {label: run_planner(world, name, args.seed + i, h) for label, name, h in variants}
        grid = runs["grid"]
        for label, name, halving in variants:
            run = runs[label]
            found = same_winner(world, grid, run)
            totals[label][0] += run.launches
            totals[label][1] += run.seconds
            totals[label][2] += int(found)
            # further noise seeds, apart from the first seeds of the other worlds
            more = [
                run_planner(world, name, 100_000 * (k + 1) + args.seed + i, halving)
                for k in range(args.seeds - 1)
            ]
            mine = [_regret(world, t, r.winner) for r in [run, *more]]
            regrets[label] += mine
            if not args.quiet:
                best = sum(r <= args.tol for r in mine)
                print(
                    f"{world.world.name:32s} {label:16s} launches={run.launches:5d} "
                    f"sim_hours={run.seconds / 3600:8.2f} pruned={run.pruned:5d} "
                    f"found_grid_winner={'yes' if found else 'NO'} "
                    f"true_best={best}/{len(mine)} regret={statistics.fmean(mine):.4f}"
                )
        ratios.append(runs["default"].launches / max(1, grid.launches))
        same.append(same_winner(world, grid, runs["default"]))
    n = len(worlds)
    for label, (launches, seconds, hits) in totals.items():
        print(
            f"TOTAL {label:16s} worlds={n} launches={launches:.0f} "
            f"sim_hours={seconds / 3600:.1f} found={hits:.0f}/{n} "
            f"true_best_rate={_rate(regrets[label], args.tol):.3f} "
            f"mean_regret={statistics.fmean(regrets[label]):.4f}"
        )
    print(
        f"default_launch_ratio={statistics.fmean(ratios):.3f} same_winner_rate={sum(same) / n:.3f} "
        f"true_best_rate={_rate(regrets['default'], args.tol):.3f} "
        f"mean_regret={statistics.fmean(regrets['default']):.4f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
