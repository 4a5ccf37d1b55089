"""Decision quality of the default planner under measurement noise (no processes launched).

Runs the default planner (as configured by each world; ``--repeat-top K`` adds a run with
``[plan].repeat_top = K``) over
simulated worlds with the analytic evaluator of the simulated engine, each world at its
own run-to-run noise and again at ``--noisy`` relative noise, ``--seeds`` noise seeds each.
The summary lines give all runs of a set and, apart, those at the worlds' own noise.
Per run it records whether the winner is correct (its true objective within ``--tol`` of
the true best configuration that passes every check and meets the requirements), the
regret (true shortfall of the winner), the launches against the grid's, and the pruned
configurations that would in truth have passed (false prunes).

Two sets of worlds, never mixed:
- **tuning**: the shipped worlds and random worlds ``--tune-worlds`` seeds from 0, noise
  seeds from 0: the worlds looked at while the planner's thresholds were written;
- **held out**: random worlds with seeds from 1000 and noise seeds from 5000, never run
  while writing or tuning the planner (``--split tuning`` runs only the first set). A
  drawn world of more than ``--max-configs`` configurations (the largest shipped world
  has 1152) is skipped for the next seed, to keep the run within minutes.

Last line: ``correct_winner=<f> false_prunes=<f> worlds=<n> heldout_correct_winner=<f>
heldout_false_prunes=<f> heldout_worlds=<n>`` (rates over runs; false prunes: the share
of pruned configurations that would have passed; worlds: count per set).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

from bringup.plan import make_planner
from bringup.plan.space import flags_key
from bringup.plan.winner import objective_name, requirement_failures
from bringup.testing.simengine import World, evaluate, load_world, random_world, shipped_worlds


@dataclass
class Truth:
    """What a noise-free, all-knowing grid would say about a world."""

    healthy: set[Any]
    best: float  # the true objective of the best correct configuration
    metric: str
    larger: bool
    configs: int

    def regret(self, world: World, config: dict[str, Any] | None) -> float:
        if config is None:
            return 1.0
        value = _true(world, config, self.metric)
        if self.larger:
            return max(0.0, 1.0 - value / self.best)
        return max(0.0, value / self.best - 1.0)


@dataclass
class Tally:
    runs: int = 0
    correct: int = 0
    bad_winners: int = 0  # a winner that would in truth fail a check
    regrets: list[float] = field(default_factory=list)
    launch_ratios: list[float] = field(default_factory=list)
    pruned: int = 0
    false_pruned: int = 0
    worlds: int = 0

    def line(self, label: str) -> str:
        return (
            f"{label:18s} runs={self.runs} worlds={self.worlds} "
            f"correct_winner={self.rate:.3f} mean_regret={statistics.fmean(self.regrets):.4f} "
            f"launch_ratio={statistics.fmean(self.launch_ratios):.3f} "
            f"false_prunes={self.false_rate:.3f} ({self.false_pruned}/{self.pruned}) "
            f"bad_winners={self.bad_winners}"
        )

    @property
    def rate(self) -> float:
        return self.correct / max(1, self.runs)

    @property
    def false_rate(self) -> float:
        return self.false_pruned / max(1, self.pruned)


def _true(world: World, config: dict[str, Any], metric: str) -> float:
    return _true_metrics(world, config)[
        metric
    ]  # a metric the simulation has no truth for: KeyError


def _true_metrics(world: World, config: dict[str, Any]) -> dict[str, float]:
    ttft = world.true_ttft_ms(config)
    return {
        "output_tok_s": world.true_output_tok_s(config),
        "ttft_p50_ms": ttft,
        "ttft_p99_ms": ttft * world.performance.ttft_tail,
    }


def truth(world: World) -> Truth:
    spec = world.to_spec()
    metric, larger = objective_name(spec)
    healthy: set[Any] = set()
    best: float | None = None
    for config in spec.configs():
        # verdicts do not depend on the noise draw; only the metrics do
        if not evaluate(world, config, random.Random(0)).result.passed:
            continue
        healthy.add(flags_key(config))
        if requirement_failures(_true_metrics(world, config), spec.objective.require):
            continue
        value = _true(world, config, metric)
        if best is None or (value > best if larger else value < best):
            best = value
    assert best is not None, f"{world.world.name}: the reference itself fails"
    return Truth(healthy, best, metric, larger, len(spec.configs()))


def run_once(
    world: World, seed: int, repeat_top: int | None
) -> tuple[dict[str, Any] | None, int, list[dict[str, Any]]]:
    """The default planner on ``world`` with noise seed ``seed``: winner, launches, pruned."""
    spec = world.to_spec()
    if repeat_top is not None:
        spec.plan.repeat_top = repeat_top
    planner = make_planner(spec, "default")
    rng = random.Random(seed)
    launches = 0
    gen = planner.plan()
    try:
        item = next(gen)
        while True:
            launches += 1
            sim = evaluate(world, item.config, rng, item.bench_scale, trial_id=f"t{launches}")
            item = gen.send(sim.result)
    except StopIteration:
        pass
    best = planner.best()
    pruned = [p.config for p in planner.pruned if not p.reason.startswith("excluded")]
    return (best.config if best else None), launches, pruned


def noisy(world: World, noise: float) -> World:
    out = world.model_copy(deep=True)
    out.performance.noise = noise
    out.world.name = f"{world.world.name}@noise{noise:g}"
    return out


def evaluate_set(
    label: str, worlds: list[World], seeds: list[int], args: argparse.Namespace
) -> tuple[Tally, Tally]:
    """(All runs, the runs at the worlds' own noise); the rest ran at ``--noisy``."""
    tally, own = Tally(worlds=len(worlds)), Tally(worlds=len(worlds))
    for world in worlds:
        t = truth(world)  # verdicts do not depend on the noise: one truth for both variants
        for variant in (world, noisy(world, args.noisy)):
            tallies = (tally, own) if variant is world else (tally,)
            for repeat_top in [None, *args.repeat_top]:
                hits = 0
                for seed in seeds:
                    winner, launches, pruned = run_once(variant, seed, repeat_top)
                    regret = t.regret(variant, winner)
                    ok = winner is not None and regret <= args.tol
                    bad = winner is not None and flags_key(winner) not in t.healthy
                    hits += int(ok)
                    for tl in tallies:
                        tl.runs += 1
                        tl.correct += int(ok)
                        tl.bad_winners += int(bad)
                        tl.regrets.append(regret)
                        tl.launch_ratios.append(launches / t.configs)
                        tl.pruned += len(pruned)
                        tl.false_pruned += sum(1 for c in pruned if flags_key(c) in t.healthy)
                if not args.quiet:
                    top = "spec" if repeat_top is None else f"repeat_top={repeat_top}"
                    print(
                        f"{label:8s} {variant.world.name:44s} {top:12s} correct={hits}/{len(seeds)}"
                    )
    return tally, own


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20, help="noise seeds per world and variant")
    ap.add_argument("--tune-worlds", type=int, default=10, help="random worlds in the tuning set")
    ap.add_argument("--heldout-worlds", type=int, default=10, help="random held-out worlds")
    ap.add_argument("--noisy", type=float, default=0.15, help="relative noise of the noisy variant")
    ap.add_argument("--tol", type=float, default=0.01, help="regret still counted as correct")
    ap.add_argument("--split", choices=["both", "tuning"], default="both")
    ap.add_argument("--max-configs", type=int, default=1200, help="largest held-out world")
    ap.add_argument(
        "--repeat-top",
        type=int,
        action="append",
        default=[],
        help="also run with this [plan].repeat_top (repeatable; the world's own always runs)",
    )
    ap.add_argument("--quiet", action="store_true", help="only the summary lines")
    args = ap.parse_args(argv)

    tuning = [load_world(p) for p in shipped_worlds()]
    tuning += [random_world(i) for i in range(args.tune_worlds)]
    tune, tune_own = evaluate_set("tuning", tuning, list(range(args.seeds)), args)
    print(tune_own.line("TUNING own-noise"))
    print(tune.line("TUNING all"))
    if args.split == "tuning":
        rate, false = tune.rate, tune.false_rate
        print(f"correct_winner={rate:.3f} false_prunes={false:.3f} worlds={tune.worlds}")
        return 0
    heldout: list[World] = []
    seed = 1000
    while len(heldout) < args.heldout_worlds:
        world = random_world(seed)
        seed += 1
        if len(world.to_spec().configs()) <= args.max_configs:
            heldout.append(world)
    held, held_own = evaluate_set("heldout", heldout, list(range(5000, 5000 + args.seeds)), args)
    print(held_own.line("HELDOUT own-noise"))
    print(held.line("HELDOUT all"))
    print(
        f"correct_winner={tune.rate:.3f} false_prunes={tune.false_rate:.3f} "
        f"worlds={tune.worlds} heldout_correct_winner={held.rate:.3f} "
        f"heldout_false_prunes={held.false_rate:.3f} heldout_worlds={held.worlds}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
