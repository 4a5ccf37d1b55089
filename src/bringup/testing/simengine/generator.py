"""Seeded random worlds: random spaces, failure regions and performance surfaces.

Each world has 2-7 axes drawn from realistic engine flags (categorical backends and
numeric memory/batch knobs), a reference of each axis's first value, multiplicative
effects with a few pairwise interactions, and failure regions of every kind: values the
hardware cannot run (named in the log or not), missing dependencies, invalid pairs (the
assertion names the flags), unexplained crashes of pairs, out-of-memory corners along the
numeric axes, garbage, hangs and drifting values (sometimes tolerated). The same seed
always gives the same world; ``json.dumps(world.model_dump(mode="json"))`` writes it out.
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
