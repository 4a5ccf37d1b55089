"""Worlds whose outcomes depend on the load: the format, its errors and the evaluator."""

from __future__ import annotations

import random

import pytest

from bringup.errors import SpecError
from bringup.plan.pruning import rule_from
from bringup.plan.space import SearchSpace
from bringup.testing.simengine import evaluate, parse_world, random_world
from bringup.testing.simengine.generator import family_world
from bringup.testing.simengine.world import World
from bringup.verdict import Category, Stage

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 79.19 GiB of which 1.12 GiB is free."
)
WORLD = f"""
[world]
name = "load"
[space]
"--attention-backend" = ["flashinfer", "triton", "fa3"]
"--max-running-requests" = [32, 64, 128]
[reference]
"--attention-backend" = "flashinfer"
"--max-running-requests" = 32
[bench]
concurrency = [1, 4, 16]
[performance]
output_tok_s = 1000.0
noise = 0.0
effects = {{ "--max-running-requests" = {{ "64" = 1.2, "128" = 1.4 }} }}
[[performance.interactions]]
# fa3's KV cache holds too few sequences: fastest alone, it stops scaling at 16 streams
when = {{ "--attention-backend" = "fa3" }}
output_tok_s = 1.3
[[performance.interactions]]
when = {{ "--attention-backend" = "fa3" }}
min_concurrency = 16
output_tok_s = 0.5
[[outcome]]
when = {{ "--max-running-requests" = ">=128", "--attention-backend" = "flashinfer" }}
kind = "crash"
min_concurrency = 16
log = "{OOM}"
[[outcome]]
when = {{ "--attention-backend" = "triton", "--max-running-requests" = 64 }}
kind = "garbage"
min_concurrency = 4
[[outcome]]
when = {{ "--attention-backend" = "triton", "--max-running-requests" = 128 }}
kind = "hang"
min_concurrency = 16
"""


def world(text: str = WORLD) -> World:
    return parse_world(text, source="load.toml")


def config(backend: str, seqs: int) -> dict[str, object]:
    return {"--attention-backend": backend, "--max-running-requests": seqs}


def test_rules_hold_from_their_concurrency_on() -> None:
    w = world()
    oom = config("flashinfer", 128)
    assert w.first_outcome(oom) is None and w.first_outcome(oom, 8) is None
    rule = w.first_outcome(oom, 16)
    assert rule is not None and rule.kind == "crash"
    assert w.load_outcome(oom) == (rule, 16)
    assert w.load_outcome(oom, [1, 4]) is None  # a benchmark that never reaches 16 streams
    garbage = w.load_outcome(config("triton", 64))
    assert garbage is not None and garbage[0].kind == "garbage" and garbage[1] == 4
    assert w.levels() == [1, 4, 16]


def test_throughput_that_stops_scaling_changes_the_best_with_the_load() -> None:
    w = world()
    fa3, ref = config("fa3", 32), config("flashinfer", 32)
    assert w.true_output_tok_s(fa3, 1) == pytest.approx(1300.0)
    assert w.true_output_tok_s(fa3, 16) == pytest.approx(650.0)
    assert w.true_output_tok_s(fa3) == w.true_output_tok_s(fa3, 16)  # the top level
    assert w.true_output_tok_s(fa3, 1) > w.true_output_tok_s(ref, 1)
    assert w.true_output_tok_s(fa3, 16) < w.true_output_tok_s(ref, 16)


@pytest.mark.parametrize(
    ("backend", "seqs", "category", "said"),
    [
        ("flashinfer", 128, Category.OOM_GPU, "exited with code 1 during the benchmarked"),
        ("triton", 64, Category.GARBAGE_OUTPUT, "at concurrency 4"),
        ("triton", 128, Category.STARTUP_TIMEOUT_OR_HANG, "at concurrency 16"),
    ],
)
def test_the_evaluator_fails_the_benchmark_stage_under_load(
    backend: str, seqs: int, category: Category, said: str
) -> None:
    w = world()
    sim = evaluate(w, config(backend, seqs), random.Random(0))
    failure = sim.result.failure
    assert failure is not None and sim.launched
    assert (failure.stage, failure.category) == (Stage.BENCHMARKED, category)
    assert said in failure.evidence[0]
    assert "output_tok_s" not in sim.result.metrics
    healthy = evaluate(w, config("flashinfer", 32), random.Random(0))
    assert healthy.result.passed
    # a crash at the first level costs less than the whole benchmark
    assert sim.seconds <= healthy.seconds


def test_per_level_figures_and_unchanged_draws_for_one_level() -> None:
    w = world()
    m = evaluate(w, config("fa3", 32), random.Random(0)).result.metrics
    assert m["c1.output_tok_s"] == pytest.approx(1300.0)
    assert m["c16.output_tok_s"] == m["output_tok_s"] == pytest.approx(650.0)
    assert "c4.output_tok_s" in m
    one = world(WORLD.replace("concurrency = [1, 4, 16]", "concurrency = [16]"))
    single = evaluate(one, config("fa3", 32), random.Random(0)).result.metrics
    assert not any(k.startswith("c") for k in single)


def test_a_load_oom_prunes_only_toward_more_memory_in_its_context() -> None:
    w = world()
    space = SearchSpace(w.to_spec())
    failed = config("flashinfer", 128)
    result = evaluate(w, failed, random.Random(0), trial_id="t1").result
    rule = rule_from(result, failed, space, [])
    assert rule is not None
    assert rule.matches(failed, space)
    assert not rule.matches(config("flashinfer", 64), space)  # less memory
    assert not rule.matches(config("fa3", 128), space)  # another backend: not named


@pytest.mark.parametrize(
    ("edit", "field", "said"),
    [
        (
            'kind = "crash"\nmin_concurrency = 16',
            "outcome.0.min_concurrency",
            "greater than or equal to 2",
        ),
        ('kind = "garbage"\nmin_concurrency = 4', "outcome.1.min_concurrency", "drift"),
        ("concurrency = [1, 4, 16]", "bench", "concurrency.0: Input should be greater than"),
        ('kind = "hang"\nmin_concurrency = 16', "outcome.2.min_concurrency", "benchmarked"),
    ],
)
def test_bad_load_rules_name_their_field(edit: str, field: str, said: str) -> None:
    bad = {
        "outcome.0.min_concurrency": 'kind = "crash"\nmin_concurrency = 1',
        "outcome.1.min_concurrency": 'kind = "drift"\nmin_concurrency = 4',
        "bench": "concurrency = [0, 16]",
        "outcome.2.min_concurrency": 'kind = "hang"\nstage = "correct"\nmin_concurrency = 16',
    }[field]
    with pytest.raises(SpecError) as err:
        world(WORLD.replace(edit, bad))
    assert f"field '{field}'" in str(err.value) and said in str(err.value)


def test_interaction_concurrency_must_be_a_load() -> None:
    with pytest.raises(SpecError, match=r"performance\.interactions\.1\.min_concurrency"):
        world(WORLD.replace("min_concurrency = 16\noutput_tok_s = 0.5", "min_concurrency = 1"))


def _healthy_at_one_stream(w: World) -> list[dict[str, object]]:
    rng = random.Random(0)
    out = []
    for c in w.to_spec().configs():
        failure = evaluate(w, c, rng).result.failure
        if failure is None or failure.stage is Stage.BENCHMARKED:
            out.append(c)
    return out


def test_world_families_add_load_near_the_best() -> None:
    assert family_world("random", 4) == random_world(4)
    assert family_world("load-failures", 4) == family_world("load-failures", 4)
    failing, moved = 0, 0
    for seed in range(10):
        w = family_world("load-failures", seed)
        assert len(w.levels()) >= 2 and w.world.name == f"random-{seed}+load-failures"
        assert evaluate(w, w.to_spec().reference_config(), random.Random(0)).result.passed
        ranked = sorted(_healthy_at_one_stream(w), key=lambda c: -w.true_output_tok_s(c))
        failing += w.load_outcome(ranked[0]) is not None  # the fastest fails under load
        s = family_world("load-scaling", seed)
        assert evaluate(s, s.to_spec().reference_config(), random.Random(0)).result.passed
        healthy = [c for c in _healthy_at_one_stream(s) if s.load_outcome(c) is None]
        alone = max(healthy, key=lambda c: s.true_output_tok_s(c, 1))
        loaded = max(healthy, key=lambda c: s.true_output_tok_s(c))
        moved += alone != loaded
    # measured on these seeds: 8 of 10 and 6 of 10
    assert failing >= 8 and moved >= 5
    with pytest.raises(ValueError, match="no world family"):
        family_world("load-everything", 0)
