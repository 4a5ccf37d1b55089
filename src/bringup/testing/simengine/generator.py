"""Seeded random worlds: random spaces, failure regions and performance surfaces.

Each world has 2-7 axes drawn from realistic engine flags (categorical backends and
numeric memory/batch knobs), a reference of each axis's first value, multiplicative
effects with a few pairwise interactions, and failure regions of every kind: values the
hardware cannot run (named in the log or not), missing dependencies, invalid pairs (the
assertion names the flags), unexplained crashes of pairs, out-of-memory corners along the
numeric axes, garbage, hangs and drifting values (sometimes tolerated). The same seed
always gives the same world; ``json.dumps(world.model_dump(mode="json"))`` writes it out.

Families (:func:`family_world`) add load to a random world, aimed at its best
configurations (a failure nobody would meet among the slow ones tests nothing): its
``[bench]`` runs several concurrency levels, and

- ``load-failures``: the best configuration at one stream runs out of memory under load
  (a memory axis at or above its value, sometimes only with its backend), and sometimes
  a near-best one crashes, answers garbage or stalls under load;
- ``load-scaling``: a value that is fastest with one stream stops scaling (its factor
  fades at the top level), small KV caches or batches stop scaling past a level, and
  sometimes a value stalls under load: the best configuration at one stream is not the
  best at the top level.
"""

from __future__ import annotations

import math
import random
from typing import Any

from bringup.spec import FlagValue
from bringup.testing.simengine.world import (
    Checks,
    Interaction,
    Outcome,
    Performance,
    Timing,
    World,
    WorldInfo,
    matches,
    value_matches,
)
from bringup.verdict import Category

CATEGORICAL: dict[str, list[FlagValue]] = {
    "--attention-backend": ["flashinfer", "triton", "fa3", "trtllm_mha", "flex_attention"],
    "--moe-runner-backend": [
        "flashinfer_cutlass",
        "triton",
        "deep_gemm",
        "flashinfer_trtllm",
        "flashinfer_cutedsl",
    ],
    "--kv-cache-dtype": ["auto", "bf16", "fp8_e4m3", "fp8_e5m2"],
    "--fp8-gemm-backend": ["auto", "cutlass", "triton", "flashinfer_trtllm", "deep_gemm"],
    "--sampling-backend": ["flashinfer", "pytorch"],
    "--schedule-policy": ["fcfs", "lpm", "dfs-weight"],
    "--speculative-algorithm": [False, "EAGLE", "NEXTN", "NGRAM"],
    "--grammar-backend": ["xgrammar", "outlines", "llguidance"],
}
NUMERIC: dict[str, list[FlagValue]] = {
    "--mem-fraction-static": [0.8, 0.85, 0.9, 0.95],
    "--max-running-requests": [32, 64, 128, 256],
    "--chunked-prefill-size": [2048, 4096, 8192, 16384],
    "--cuda-graph-max-bs-decode": [32, 64, 128, 256],
}
_NO_KERNEL = (
    "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect."
)
_ILLEGAL = (
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
)
_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 79.19 GiB of which 1.12 GiB is free."
)


def _snake(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def random_world(seed: int) -> World:
    rng = random.Random(seed)
    n_cat = rng.randint(1, 4)
    n_num = rng.randint(1, 3)
    flags = rng.sample(sorted(CATEGORICAL), n_cat) + rng.sample(sorted(NUMERIC), n_num)
    space: dict[str, list[FlagValue]] = {}
    for flag in flags:
        pool = CATEGORICAL.get(flag) or NUMERIC[flag]
        k = rng.randint(2, min(4, len(pool)))
        if flag in NUMERIC:
            start = rng.randint(0, len(pool) - k)
            space[flag] = list(pool[start : start + k])
        else:
            space[flag] = [pool[0], *rng.sample(pool[1:], k - 1)]
    reference = {f: v[0] for f, v in space.items()}
    perf = _performance(rng, space)
    perf.interactions += _noisy_regions(random.Random(f"noise-{seed}"), space)
    outcomes = _outcomes(rng, space, reference)
    tolerate = [
        o.when and next(iter(o.when)) for o in outcomes if o.kind == "drift" and rng.random() < 0.3
    ]
    return World(
        world=WorldInfo(
            name=f"random-{seed}",
            engine="sglang",
            engine_version="0.5.23",
            hardware=rng.choice(["8x H200", "8x B200", "4x RTX PRO 6000 (SM120)", "2x H100"]),
            model="sim/random-model",
        ),
        timing=Timing(
            startup_s=rng.uniform(60, 600),
            check_s=rng.uniform(10, 60),
            bench_s=rng.uniform(60, 300),
            teardown_s=10.0,
            start_timeout_s=900.0,
        ),
        performance=perf,
        space=space,
        reference=reference,
        checks=Checks(tolerate=tolerate),
        outcome=outcomes,
    )


def _performance(rng: random.Random, space: dict[str, list[FlagValue]]) -> Performance:
    effects: dict[str, dict[str, float]] = {}
    ttft: dict[str, dict[str, float]] = {}
    for flag, values in space.items():
        if flag in NUMERIC:
            slope = rng.uniform(-0.04, 0.12)
            effects[flag] = {str(v): (1 + slope) ** i for i, v in enumerate(values)}
            ttft[flag] = {str(v): (1 + rng.uniform(0, 0.15)) ** i for i, v in enumerate(values)}
        else:
            effects[flag] = {str(v): math.exp(rng.gauss(0, 0.15)) for v in values[1:]}
            ttft[flag] = {str(v): math.exp(rng.gauss(0, 0.1)) for v in values[1:]}
    interactions = []
    flags = list(space)
    for _ in range(rng.randint(0, 3)):
        a, b = rng.sample(flags, 2)
        when = {a: rng.choice(space[a][1:]), b: rng.choice(space[b][1:])}
        interactions.append(Interaction(when=when, output_tok_s=math.exp(rng.gauss(0, 0.12))))
    return Performance(
        output_tok_s=rng.uniform(200, 5000),
        ttft_p50_ms=rng.uniform(50, 800),
        noise=rng.uniform(0.01, 0.04),
        effects=effects,
        ttft_effects=ttft,
        interactions=interactions,
    )


def _noisy_regions(rng: random.Random, space: dict[str, list[FlagValue]]) -> list[Interaction]:
    """Regions measured far less steadily than the rest (a backend whose speed wanders)."""
    out = []
    flags = [f for f in space if len(space[f]) > 1]
    for _ in range(rng.randint(0, 2) if flags else 0):
        chosen = rng.sample(flags, min(len(flags), rng.randint(1, 2)))
        when: dict[str, FlagValue | list[FlagValue]] = {f: rng.choice(space[f][1:]) for f in chosen}
        out.append(Interaction(when=when, noise=rng.uniform(0.08, 0.25)))
    return out


def _crash(when: dict[str, Any], category: Category, log: str, after: float) -> Outcome:
    return Outcome(when=when, kind="crash", category=category, log=log, after_s=after)


def _outcomes(
    rng: random.Random, space: dict[str, list[FlagValue]], reference: dict[str, FlagValue]
) -> list[Outcome]:
    cats = [f for f in space if f not in NUMERIC]
    nums = [f for f in space if f in NUMERIC]
    out: list[Outcome] = []

    def pick_value(flags: list[str]) -> tuple[str, FlagValue] | None:
        flags = [f for f in flags if len(space[f]) > 1]
        if not flags:
            return None
        f = rng.choice(flags)
        return f, rng.choice(space[f][1:])

    for _ in range(rng.randint(0, 2)):
        fv = pick_value(cats)
        if fv:
            f, v = fv
            named = rng.random() < 0.6
            head = f"RuntimeError: {v} kernels are not built for this GPU\n" if named else ""
            out.append(
                _crash(
                    {f: v}, Category.UNSUPPORTED_HARDWARE, head + _NO_KERNEL, rng.uniform(20, 200)
                )
            )
    if rng.random() < 0.3 and (fv := pick_value(cats)):
        f, v = fv
        log = (
            "ImportError: libcudnn_engines_precompiled.so.9: cannot open shared object file: "
            "No such file or directory"
        )
        out.append(_crash({f: v}, Category.MISSING_DEPENDENCY, log, rng.uniform(5, 30)))
    for _ in range(rng.randint(0, 2)):
        if len(space) < 2:
            break
        a, b = rng.sample(list(space), 2)
        if len(space[a]) < 2 or len(space[b]) < 2:
            continue
        when = {a: rng.choice(space[a][1:]), b: rng.choice(space[b][1:])}
        if rng.random() < 0.6:
            log = (
                f"AssertionError: {_snake(a)}={when[a]} is not supported together with "
                f"{_snake(b)}={when[b]}"
            )
            out.append(_crash(when, Category.INVALID_CONFIG, log, rng.uniform(5, 20)))
        else:
            out.append(_crash(when, Category.RUNTIME_CRASH, _ILLEGAL, rng.uniform(60, 300)))
    if nums and rng.random() < 0.7:
        f = rng.choice(nums)
        threshold = rng.choice(space[f][1:]) if len(space[f]) > 1 else space[f][0]
        region: dict[str, Any] = {f: f">={threshold}"}
        others = [g for g in nums if g != f and len(space[g]) > 1]
        if others and rng.random() < 0.5:
            g = rng.choice(others)
            region[g] = f">={rng.choice(space[g][1:])}"
        out.append(_crash(region, Category.OOM_GPU, _OOM, rng.uniform(100, 400)))
    if rng.random() < 0.35 and (fv := pick_value(cats)):
        out.append(Outcome(when={fv[0]: fv[1]}, kind="garbage", text="!!!!!!!!!!!!!!!!"))
    if rng.random() < 0.15 and (fv := pick_value(cats)):
        out.append(Outcome(when={fv[0]: fv[1]}, kind="hang", log="Capture cuda graph begin."))
    if rng.random() < 0.35 and (fv := pick_value(cats)):
        out.append(Outcome(when={fv[0]: fv[1]}, kind="drift", logprob_drift=rng.uniform(0.08, 0.3)))
    # The reference is the conservative baseline: keep it working.
    return [o for o in out if not _matches_ref(o, reference)]


def _matches_ref(outcome: Outcome, reference: dict[str, FlagValue]) -> bool:
    return matches(dict(reference), outcome.when)


FAMILIES = ("random", "load-failures", "load-scaling")
_LEVELS = ([1, 16], [1, 4, 16], [1, 8, 32])


def family_world(family: str, seed: int) -> World:
    """The random world of ``seed``, with the load of ``family`` (see the module docstring);
    ``"random"`` is :func:`random_world` itself."""
    world = random_world(seed)
    if family == "random":
        return world
    rng = random.Random(f"{family}-{seed}")
    world.bench = {"concurrency": list(rng.choice(_LEVELS))}
    world.world.name = f"{world.world.name}+{family}"
    if family == "load-failures":
        _load_failures(rng, world)
    elif family == "load-scaling":
        _load_scaling(rng, world)
    else:
        raise ValueError(f"no world family {family!r}; families: {', '.join(FAMILIES)}")
    return world


def _ranked(world: World, streams: int) -> list[dict[str, Any]]:
    """The configurations no rule fails at one stream, fastest at ``streams`` first."""
    from bringup.testing.simengine.evaluate import evaluate

    rng = random.Random(0)
    healthy = [c for c in world.to_spec().configs() if evaluate(world, c, rng).result.passed]
    return sorted(healthy, key=lambda c: -world.true_output_tok_s(c, streams))


def _under_load(when: dict[str, Any], kind: str, level: int, **extra: Any) -> Outcome:
    return Outcome(when=when, kind=kind, min_concurrency=level, **extra)


def _load_failures(rng: random.Random, world: World) -> None:
    levels = world.levels()
    ranked = _ranked(world, levels[-1])
    reference = dict(world.reference)
    nums = [f for f in world.space if f in NUMERIC and len(world.space[f]) > 1]
    cats = [f for f in world.space if f not in NUMERIC and len(world.space[f]) > 1]
    added: list[Outcome] = []
    # the fastest configuration that uses more than the least memory on some axis: the
    # reference (least memory everywhere) keeps working
    aims = [(c, f) for c in ranked[:10] for f in nums if c[f] != world.space[f][0]]
    if aims:
        best, f = aims[0]
        when: dict[str, Any] = {f: f">={best[f]}"}
        if cats and rng.random() < 0.5:
            g = rng.choice(cats)
            when[g] = best[g]
        level = rng.choice(levels[1:])
        added.append(_under_load(when, "crash", level, category=Category.OOM_GPU, log=_OOM))
    # a near-best configuration that fails under load in a departure of its own
    near = [
        (c, departed)
        for c in ranked[1:6]
        if not any(o.holds(c, levels[-1]) for o in added)
        and (departed := [f for f in cats if not value_matches(c[f], reference.get(f))])
    ]
    if near and rng.random() < 0.6:
        victim, departed = rng.choice(near)
        chosen = rng.sample(departed, min(len(departed), rng.randint(1, 2)))
        when = {f: victim[f] for f in chosen}
        kind = rng.choice(["crash", "garbage", "hang"])
        extra: dict[str, Any] = {"log": _ILLEGAL, "category": Category.RUNTIME_CRASH}
        added.append(
            _under_load(when, kind, rng.choice(levels[1:]), **(extra if kind == "crash" else {}))
        )
    kept = [o for o in added if not _matches_ref(o, reference)]
    world.outcome[:0] = kept  # before the idle rules: at its load each decides first


def _load_scaling(rng: random.Random, world: World) -> None:
    levels = world.levels()
    top = levels[-1]
    perf = world.performance
    cats = [f for f in world.space if f not in NUMERIC and len(world.space[f]) > 1]
    nums = [f for f in world.space if f in NUMERIC and len(world.space[f]) > 1]
    if cats:
        # the value that wins with one stream: faster alone, fading under load
        f = rng.choice(cats)
        v = rng.choice(world.space[f][1:])
        perf.effects.setdefault(f, {})
        perf.effects[f][str(v)] = perf.effects[f].get(str(v), 1.0) * rng.uniform(1.15, 1.35)
        fade = rng.uniform(0.55, 0.8)
        perf.interactions.append(
            Interaction(when={f: v}, min_concurrency=rng.choice(levels[1:]), output_tok_s=fade)
        )
    if nums:
        # a KV cache or batch too small for the top level: it stops scaling past a level
        f = rng.choice(nums)
        values = world.space[f]
        small = values[rng.randint(0, len(values) - 2)]
        perf.interactions.append(
            Interaction(
                when={f: f"<={small}"},
                min_concurrency=rng.choice(levels[1:]),
                output_tok_s=rng.uniform(0.5, 0.85),
            )
        )
    if cats and rng.random() < 0.4:
        ranked = _ranked(world, top)
        victim = rng.choice(ranked[1:4] or ranked)
        g = rng.choice(cats)
        rule = _under_load({g: victim[g]}, "hang", rng.choice(levels[1:]))
        if not _matches_ref(rule, dict(world.reference)):
            world.outcome.insert(0, rule)
