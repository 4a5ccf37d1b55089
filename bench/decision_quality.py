"""Decision quality of the default planner under measurement noise (no processes launched).

Runs the default planner (as configured by each world; ``--repeat-top K`` adds a run with
``[plan].repeat_top = K``) over simulated worlds with the analytic evaluator of the
simulated engine, ``--seeds`` noise seeds each, at each world's own run-to-run noise
(which some configurations of a world may raise: ``[[performance.interactions]]`` with a
``noise``); ``--noisy X`` adds a stress variant of every world at X relative noise,
reported apart and left out of the figures. Per run it records whether the winner is the
true best (its true objective within ``--tol`` of the best configuration that passes every
check and meets the requirements), the regret (true shortfall of the winner; 1 for no
winner), the launches, whether the winner would in truth fail a check (a bad winner), and
the pruned configurations that would have passed (false prunes). When the true best is
missed, the world's line says why: every near-best configuration was ``pruned``, some were
never tried (``untried``), or one was measured and ``lost`` to another.

Two sets of worlds, never mixed:
- **tuning**: the shipped worlds (among them two written for this bench, with
  interactions, context-dependent failures and noisy regions) and random worlds
  ``--tune-worlds`` seeds from 0, noise seeds from 0: the worlds looked at while the
  planner's thresholds were written; ``--tune-base N`` (N > 0) draws the random worlds
  from seed N instead and leaves the shipped worlds out (development worlds, e.g. 500:
  tuning figures on worlds the thresholds were not written on), skipping a world over
  ``--max-configs`` as the held-out set does;
- **held out**: random worlds with seeds from ``--heldout-base`` (1000) and noise seeds
  from ``--heldout-noise-base`` (5000), never run while writing or tuning the planner
  (``--split tuning`` runs only the first set); once a range has been measured it has been
  seen, and a fresh one (say ``--heldout-base 7000 --heldout-noise-base 9000``) is the
  next clean held-out figure. A
  drawn world of more than ``--max-configs`` configurations (the largest shipped world
  has 1152) is skipped for the next seed, to keep the run within minutes.

World families (``--family``, repeatable; ``random`` when none is named): ``random`` is
the random worlds above; ``load-failures`` and ``load-scaling`` are the same seeds' worlds
with load added (``bringup.testing.simengine.generator``: several ``[bench]`` levels; the
best configuration at one stream running out of memory under load, near-best ones
crashing, answering garbage or stalling under load; values fastest alone that stop
scaling, KV caches too small for the top level). Each set is the named families' worlds
over the same seeds (the shipped worlds once, in the tuning set); each family's figures
are printed on a line of their own before the set's (``TUNING load-scaling``).

The launch ratio is all launches over all grid sizes of a set's runs (the cost of the
planner's sweeps against running every grid); the mean of per-run ratios, which tiny
worlds dominate (a two-configuration world cannot go below 1), is printed beside it.

Last two lines: ``tuning: true_best_rate=<f> ...`` (the tuning set), then the held-out
set as ``true_best_rate=<f> mean_regret=<f> launch_ratio=<f> bad_winners=<n>``; with
``--split tuning`` the last line is the tuning set in that format, and ``--split heldout``
runs the held-out set alone (a fresh range without running the tuning set again).
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
from bringup.testing.simengine import World, evaluate, load_world, shipped_worlds
from bringup.testing.simengine.generator import FAMILIES, family_world


@dataclass
class Truth:
    """What a noise-free, all-knowing grid would say about a world."""

    healthy: set[Any]
    best: float  # the true objective of the best correct configuration
    metric: str
    larger: bool
    configs: int
    near_best: set[Any] = field(default_factory=set)  # healthy, meeting require, within tol

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
    launches: int = 0
    grid: int = 0
    launch_ratios: list[float] = field(default_factory=list)
    pruned: int = 0
    false_pruned: int = 0
    worlds: int = 0
    misses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MISSES, 0))

    def add(self, other: Tally) -> None:
        self.runs += other.runs
        self.correct += other.correct
        self.bad_winners += other.bad_winners
        self.regrets += other.regrets
        self.launches += other.launches
        self.grid += other.grid
        self.launch_ratios += other.launch_ratios
        self.pruned += other.pruned
        self.false_pruned += other.false_pruned
        for k, v in other.misses.items():
            self.misses[k] += v

    def figures(self) -> str:
        return (
            f"true_best_rate={self.rate:.3f} mean_regret={statistics.fmean(self.regrets):.4f} "
            f"launch_ratio={self.launch_ratio:.3f} bad_winners={self.bad_winners}"
        )

    def line(self, label: str) -> str:
        missed = " ".join(f"{k}={v}" for k, v in self.misses.items())
        return (
            f"{label:20s} runs={self.runs} worlds={self.worlds} {self.figures()} "
            f"mean_run_launch_ratio={statistics.fmean(self.launch_ratios):.3f} "
            f"false_prunes={self.false_rate:.3f} ({self.false_pruned}/{self.pruned}) "
            f"missed: {missed}"
        )

    @property
    def rate(self) -> float:
        return self.correct / max(1, self.runs)

    @property
    def launch_ratio(self) -> float:
        return self.launches / max(1, self.grid)

    @property
    def false_rate(self) -> float:
        return self.false_pruned / max(1, self.pruned)


MISSES = ("pruned", "untried", "lost")


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


def truth(world: World, tol: float = 0.01) -> Truth:
    spec = world.to_spec()
    metric, larger = objective_name(spec)
    healthy: set[Any] = set()
    meeting: list[dict[str, Any]] = []
    best: float | None = None
    for config in spec.configs():
        # verdicts do not depend on the noise draw; only the metrics do
        if not evaluate(world, config, random.Random(0)).result.passed:
            continue
        healthy.add(flags_key(config))
        if requirement_failures(_true_metrics(world, config), spec.objective.require):
            continue
        meeting.append(config)
        value = _true(world, config, metric)
        if best is None or (value > best if larger else value < best):
            best = value
    assert best is not None, f"{world.world.name}: the reference itself fails"
    t = Truth(healthy, best, metric, larger, len(spec.configs()))
    t.near_best = {flags_key(c) for c in meeting if t.regret(world, c) <= tol}
    return t


@dataclass
class Run:
    winner: dict[str, Any] | None
    launches: int
    pruned: list[dict[str, Any]]
    tried: set[Any]


def run_once(world: World, seed: int, repeat_top: int | None) -> Run:
    """The default planner on ``world`` with noise seed ``seed``."""
    spec = world.to_spec()
    if repeat_top is not None:
        spec.plan.repeat_top = repeat_top
    planner = make_planner(spec, "default")
    rng = random.Random(seed)
    launches = 0
    tried: set[Any] = set()
    gen = planner.plan()
    try:
        item = next(gen)
        while True:
            launches += 1
            tried.add(flags_key(item.config))
            sim = evaluate(world, item.config, rng, item.bench_scale, trial_id=f"t{launches}")
            item = gen.send(sim.result)
    except StopIteration:
        pass
    best = planner.best()
    pruned = [p.config for p in planner.pruned if not p.reason.startswith("excluded")]
    return Run(best.config if best else None, launches, pruned, tried)


def noisy(world: World, noise: float) -> World:
    out = world.model_copy(deep=True)
    out.performance.noise = noise
    for inter in out.performance.interactions:
        inter.noise = None
    out.world.name = f"{world.world.name}@noise{noise:g}"
    return out


def miss_kind(run: Run, t: Truth) -> str:
    """Why a run missed the true best (see the module docstring)."""
    if run.tried & t.near_best:
        return "lost"
    if t.near_best <= {flags_key(c) for c in run.pruned}:
        return "pruned"
    return "untried"


def world_tally(
    world: World, t: Truth, seeds: list[int], repeat_top: int | None, tol: float
) -> Tally:
    tl = Tally()
    for seed in seeds:
        run = run_once(world, seed, repeat_top)
        regret = t.regret(world, run.winner)
        ok = run.winner is not None and regret <= tol
        tl.runs += 1
        tl.correct += int(ok)
        tl.bad_winners += int(run.winner is not None and flags_key(run.winner) not in t.healthy)
        tl.regrets.append(regret)
        tl.launches += run.launches
        tl.grid += t.configs
        tl.launch_ratios.append(run.launches / t.configs)
        tl.pruned += len(run.pruned)
        tl.false_pruned += sum(1 for c in run.pruned if flags_key(c) in t.healthy)
        if not ok:
            tl.misses[miss_kind(run, t)] += 1
    return tl


def evaluate_set(
    label: str,
    worlds: list[World],
    seeds: list[int],
    args: argparse.Namespace,
    by_family: dict[str, Tally] | None = None,
) -> tuple[Tally, Tally]:
    """(Runs at the worlds' own noise, runs of the ``--noisy`` stress variant); each random
    world's own-noise runs also go to its family's tally in ``by_family``."""
    own, stress = Tally(worlds=len(worlds)), Tally(worlds=len(worlds))
    for world in worlds:
        fam: Tally | None = None
        if by_family is not None and world.world.name.startswith("random-"):
            fam = by_family.setdefault(world.world.name.partition("+")[2] or "random", Tally())
            fam.worlds += 1
        t = truth(world, args.tol)  # verdicts do not depend on the noise: one truth for both
        variants = [world] + ([noisy(world, args.noisy)] if args.noisy else [])
        for variant in variants:
            for repeat_top in [None, *args.repeat_top]:
                tl = world_tally(variant, t, seeds, repeat_top, args.tol)
                (own if variant is world else stress).add(tl)
                if fam is not None and variant is world:
                    fam.add(tl)
                if not args.quiet:
                    top = "spec" if repeat_top is None else f"repeat_top={repeat_top}"
                    missed = " ".join(f"{k}={v}" for k, v in tl.misses.items() if v)
                    print(
                        f"{label:8s} {variant.world.name:44s} {top:12s} configs={t.configs:<5d} "
                        f"true_best={tl.correct}/{tl.runs} "
                        f"regret={statistics.fmean(tl.regrets):.4f} "
                        f"launch_ratio={tl.launch_ratio:.3f} {missed}".rstrip()
                    )
    return own, stress


def _family_lines(label: str, tallies: dict[str, Tally], families: list[str]) -> None:
    """Each family's own figures, unless the random family ran alone (the set's line)."""
    if families == ["random"]:
        return
    for family in families:
        if family in tallies:
            print(tallies[family].line(f"{label} {family}"))


def world_seeds(base: int, count: int, max_configs: int) -> list[int]:
    """``count`` random world seeds from ``base``, skipping a world of more than
    ``max_configs`` configurations for the next seed."""
    out: list[int] = []
    seed = base
    while len(out) < count:
        if len(family_world("random", seed).to_spec().configs()) <= max_configs:
            out.append(seed)
        seed += 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20, help="noise seeds per world and variant")
    ap.add_argument("--tune-worlds", type=int, default=10, help="random worlds in the tuning set")
    ap.add_argument(
        "--tune-base",
        type=int,
        default=0,
        help="first random tuning world seed; above 0 the shipped worlds are left out and "
        "worlds over --max-configs skipped (development worlds)",
    )
    ap.add_argument("--heldout-worlds", type=int, default=10, help="random held-out worlds")
    ap.add_argument("--noisy", type=float, default=0.0, help="add a stress variant at this noise")
    ap.add_argument("--tol", type=float, default=0.01, help="regret still counted as true best")
    ap.add_argument("--split", choices=["both", "tuning", "heldout"], default="both")
    ap.add_argument(
        "--heldout-base",
        type=int,
        default=1000,
        help="first held-out world seed (a fresh range: one nobody has run)",
    )
    ap.add_argument(
        "--heldout-noise-base",
        type=int,
        default=5000,
        help="first noise seed of the held-out runs",
    )
    ap.add_argument("--max-configs", type=int, default=1200, help="largest held-out world")
    ap.add_argument(
        "--repeat-top",
        type=int,
        action="append",
        default=[],
        help="also run with this [plan].repeat_top (repeatable; the world's own always runs)",
    )
    ap.add_argument(
        "--family",
        action="append",
        choices=FAMILIES,
        default=[],
        help="a family of random worlds (repeatable; default: random)",
    )
    ap.add_argument("--quiet", action="store_true", help="only the summary lines")
    args = ap.parse_args(argv)
    families: list[str] = args.family or ["random"]

    tune: Tally | None = None
    if args.split != "heldout":
        tuning = [load_world(p) for p in shipped_worlds()] if args.tune_base <= 0 else []
        tune_seeds = (
            list(range(args.tune_worlds))
            if args.tune_base <= 0
            else world_seeds(args.tune_base, args.tune_worlds, args.max_configs)
        )
        tuning += [family_world(f, i) for f in families for i in tune_seeds]
        fams: dict[str, Tally] = {}
        tune, tune_stress = evaluate_set("tuning", tuning, list(range(args.seeds)), args, fams)
        _family_lines("TUNING", fams, families)
        print(tune.line("TUNING"))
        if args.noisy:
            print(tune_stress.line(f"TUNING @{args.noisy:g}"))
        if args.split == "tuning":
            print(tune.figures())
            return 0
    heldout: list[World] = [
        family_world(f, seed)
        for seed in world_seeds(args.heldout_base, args.heldout_worlds, args.max_configs)
        for f in families
    ]
    fams = {}
    held, held_stress = evaluate_set(
        "heldout",
        heldout,
        list(range(args.heldout_noise_base, args.heldout_noise_base + args.seeds)),
        args,
        fams,
    )
    _family_lines("HELDOUT", fams, families)
    print(held.line("HELDOUT"))
    if args.noisy:
        print(held_stress.line(f"HELDOUT @{args.noisy:g}"))
    if tune is not None:
        print(f"tuning: {tune.figures()}")
    print(held.figures())  # the held-out worlds, never tuned on
    return 0


if __name__ == "__main__":
    sys.exit(main())
