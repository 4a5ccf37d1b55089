"""World files, the analytic evaluator on the seed worlds, and random worlds."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bringup.errors import SpecError
from bringup.plan import make_planner
from bringup.testing.simengine import (
    evaluate,
    load_world,
    parse_world,
    random_world,
    shipped_worlds,
)
from bringup.testing.simengine.world import value_matches
from bringup.verdict import Category, Status, TrialResult

QWEN = "sglang_sm120_qwen35"
GLM = "sglang_sm120_glm5_mla"


def ref_with(world_name: str, **changes: object) -> dict[str, object]:
    world = load_world(world_name)
    config = world.to_spec().reference_config()
    config.update({f"--{k.replace('_', '-')}": v for k, v in changes.items()})
    return config


def verdict(world_name: str, **changes: object) -> TrialResult:
    return evaluate(
        load_world(world_name), ref_with(world_name, **changes), random.Random(0)
    ).result


def test_shipped_worlds_load_and_make_specs() -> None:
    names = {p.stem for p in shipped_worlds()}
    assert {QWEN, GLM} <= names
    for path in shipped_worlds():
        spec = load_world(path).to_spec()
        assert spec.configs() and spec.reference_config()


@pytest.mark.parametrize(
    ("actual", "expected", "ok"),
    [
        (0.9, ">=0.85", True),
        ("0.8", ">=0.85", False),
        ("128", 128, True),
        (False, False, True),
        ("NEXTN", ["EAGLE", "NEXTN"], True),
        ("auto", "!=auto", False),
        ("flashinfer", "flashinfer_cutlass", False),
    ],
)
def test_condition_values(actual: object, expected: object, ok: bool) -> None:
    assert value_matches(actual, expected) is ok


def test_seed_world_reference_works() -> None:
    r = verdict(QWEN)
    assert r.status is Status.PASSED and r.metrics["output_tok_s"] > 0


@pytest.mark.parametrize(
    ("changes", "category"),
    [
        ({"moe_runner_backend": "flashinfer_trtllm"}, Category.UNSUPPORTED_HARDWARE),
        (
            {"moe_runner_backend": "flashinfer_trtllm", "mem_fraction_static": 0.88},
            Category.OOM_GPU,
        ),
        ({"fp4_gemm_backend": "flashinfer_trtllm"}, Category.UNSUPPORTED_HARDWARE),
        ({"moe_runner_backend": "flashinfer_cutedsl"}, Category.GARBAGE_OUTPUT),
        ({"kv_cache_dtype": "fp8_e4m3"}, Category.ACCURACY_REGRESSION),
        ({"speculative_algorithm": "NEXTN"}, Category.INVALID_CONFIG),
        (
            {
                "speculative_algorithm": "NEXTN",
                "mamba_radix_cache_strategy": "extra_buffer",
                "speculative_eagle_topk": 4,
            },
            Category.INVALID_CONFIG,
        ),
    ],
)
def test_seed_world_failures(changes: dict[str, object], category: Category) -> None:
    r = verdict(QWEN, **changes)
    assert r.failure is not None and r.failure.category is category
    assert r.failure.evidence


def test_nextn_with_extra_buffer_works_and_is_faster() -> None:
    fast = verdict(QWEN, speculative_algorithm="NEXTN", mamba_radix_cache_strategy="extra_buffer")
    assert (
        fast.passed and fast.metrics["output_tok_s"] > verdict(QWEN).metrics["output_tok_s"] * 1.1
    )


def test_mla_world_backends() -> None:
    head_dim = verdict(GLM, attention_backend="trtllm_mla").failure
    assert head_dim is not None and head_dim.category is Category.MODEL_INCOMPATIBLE
    assert any("qk_nope_head_dim" in e for e in head_dim.evidence)
    crash = verdict(GLM, attention_backend="cutlass_mla").failure
    assert crash is not None and crash.category is Category.RUNTIME_CRASH and crash.evidence
    slow = verdict(GLM, kv_cache_dtype="fp8_e4m3")
    assert slow.passed and slow.metrics["output_tok_s"] < verdict(GLM).metrics["output_tok_s"] * 0.7


def test_removed_flag_is_rejected_like_the_engine() -> None:
    world = load_world(QWEN)
    config = ref_with(QWEN)
    config["--mamba-scheduler-strategy"] = "extra_buffer"
    sim = evaluate(world, config, random.Random(0))
    assert not sim.launched and sim.result.failure is not None
    assert sim.result.failure.category is Category.INVALID_CONFIG


def test_json_world_and_bad_world(tmp_path: Path) -> None:
    world = random_world(3)
    path = tmp_path / "w.json"
    path.write_text(json.dumps(world.model_dump(mode="json")))
    assert load_world(path) == world
    with pytest.raises(SpecError, match="field"):
        parse_world('[world]\nname = "x"\n')


def test_random_worlds_are_seeded_and_keep_the_reference_working() -> None:
    assert random_world(7) == random_world(7)
    assert random_world(7) != random_world(8)
    for seed in range(20):
        world = random_world(seed)
        r = evaluate(world, world.to_spec().reference_config(), random.Random(seed)).result
        assert r.passed, (seed, r.failure)


def test_default_planner_beats_the_grid_on_the_seed_world() -> None:
    world = load_world(QWEN)
    spec = world.to_spec()
    planner = make_planner(spec)
    rng = random.Random(1)
    gen = planner.plan()
    launched = 0
    try:
        item = next(gen)
        while True:
            launched += 1
            item = gen.send(
                evaluate(world, item.config, rng, item.bench_scale, f"t{launched}").result
            )
    except StopIteration:
        pass
    best = planner.best()  # type: ignore[attr-defined]
    assert best is not None
    assert best.config["--speculative-algorithm"] == "NEXTN"
    assert best.config["--moe-runner-backend"] == "flashinfer_cutlass"
    assert launched < 0.1 * len(spec.configs())


def test_an_interaction_raises_the_noise_of_the_configurations_it_holds_for() -> None:
    world = load_world("vllm_h200_fp8_interactions")
    noisy = {
        "--attention-backend": "TRITON_ATTN",
        "--kv-cache-dtype": "fp8",
        "--max-num-seqs": 512,
        "--max-num-batched-tokens": 8192,
    }
    steady = {**noisy, "--attention-backend": "FLASHINFER"}
    assert world.noise_of(noisy) == 0.25 and world.noise_of(steady) == 0.02

    def spread(config: dict[str, object]) -> float:
        rng = random.Random(3)
        draws = [evaluate(world, config, rng).result.metrics["output_tok_s"] for _ in range(200)]
        mean = sum(draws) / len(draws)
        return (sum((d - mean) ** 2 for d in draws) / (len(draws) - 1)) ** 0.5 / mean

    # 200 draws put a relative sd within about 10% of its value
    assert 0.2 < spread(noisy) < 0.3 and spread(steady) < 0.03
