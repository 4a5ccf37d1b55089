"""The default planner: order, pruning from verdicts, budgets, halving and repeats."""

from __future__ import annotations

from collections.abc import Callable

from bringup.plan import DefaultPlanner, GridPlanner, PlannedTrial, make_planner
from bringup.plan.pruning import rule_from
from bringup.plan.space import SearchSpace
from bringup.spec import Config, Spec, parse_spec
from bringup.verdict import Category, Stage, Status, TrialResult

SPEC = """
[engine]
name = "sglang"
[model]
path = "m"
[space]
"--moe-runner-backend" = ["flashinfer_cutlass", "triton", "flashinfer_trtllm"]
"--kv-cache-dtype" = ["bf16", "fp8_e4m3"]
"--mem-fraction-static" = [0.8, 0.9, 0.95]
[reference]
"--moe-runner-backend" = "flashinfer_cutlass"
"""

Judge = Callable[[Config, TrialResult], None]


def spec(extra: str = "") -> Spec:
    return parse_spec(SPEC + extra)


def drive(planner: DefaultPlanner | GridPlanner, judge: Judge) -> list[PlannedTrial]:
    """Run the planner against ``judge``; every config passes at 1000 tok/s unless it fails."""
    seen: list[PlannedTrial] = []
    gen = planner.plan()
    try:
        item = next(gen)
        while True:
            seen.append(item)
            r = TrialResult(trial_id=f"t{len(seen)}", flags=dict(item.config))
            r.status, r.stage = Status.PASSED, Stage.PASSED
            r.metrics = {"output_tok_s": 1000.0, "ttft_p50_ms": 100.0, "ttft_p99_ms": 150.0}
            judge(item.config, r)
            item = gen.send(r)
    except StopIteration:
        pass
    return seen


def speed(factors: dict[object, float]) -> Judge:
    def judge(config: Config, r: TrialResult) -> None:
        value = 1000.0
        for v in config.values():
            value *= factors.get(v, 1.0)
        r.metrics["output_tok_s"] = value

    return judge


def test_registered_as_default() -> None:
    assert isinstance(make_planner(spec()), DefaultPlanner)
    assert isinstance(make_planner(spec(), "grid"), GridPlanner)


def test_reference_first_then_single_departures_most_mature_first() -> None:
    seen = drive(DefaultPlanner(spec=spec()), speed({}))
    assert seen[0].purpose == "reference"
    assert seen[0].config == spec().reference_config()
    departures = [
        sum(c != r for c, r in zip(t.config.values(), seen[0].config.values(), strict=True))
        for t in seen
    ]
    assert departures[1:6] == [1, 1, 1, 1, 1]
    # The second value of an axis (more mature) comes before its third.
    order = [
        t.config["--moe-runner-backend"]
        for t in seen[1:6]
        if t.config["--moe-runner-backend"] != "flashinfer_cutlass"
    ]
    assert order == ["triton", "flashinfer_trtllm"]


def test_stops_when_no_combination_can_beat_the_best() -> None:
    planner = DefaultPlanner(spec=spec())
    seen = drive(
        planner,
        speed({"triton": 0.8, "flashinfer_trtllm": 0.7, "fp8_e4m3": 0.85, 0.9: 0.9, 0.95: 0.8}),
    )
    explored = [t for t in seen if t.purpose != "repeat"]
    assert len(explored) == 6  # the reference and its five single departures
    assert any(n.startswith("stopped exploring") for n in planner.notes)
    # the reference leads on single measurements with nothing measured twice: how far the
    # next launch lands is unknown, so it is measured once more (the noise it gives then
    # decides the ranking)
    assert [t.purpose for t in seen[6:]] == ["repeat"]
    assert seen[6].config == seen[0].config


def test_unsupported_hardware_prunes_the_value_everywhere() -> None:
    def judge(config: Config, r: TrialResult) -> None:
        if config["--moe-runner-backend"] == "flashinfer_trtllm":
            r.fail(
                Stage.LAUNCHING,
                Category.UNSUPPORTED_HARDWARE,
                ["RuntimeError: flashinfer_trtllm needs SM100"],
            )

    planner = DefaultPlanner(spec=spec())
    seen = drive(planner, judge)
    launched = [t.config for t in seen if t.config["--moe-runner-backend"] == "flashinfer_trtllm"]
    assert len(launched) == 1
    pruned = [p for p in planner.pruned if p.config["--moe-runner-backend"] == "flashinfer_trtllm"]
    assert len(pruned) == 5
    assert all(p.by_trial is not None and "flashinfer_trtllm" in p.reason for p in pruned)


def test_invalid_config_naming_two_flags_prunes_only_that_combination() -> None:
    def judge(config: Config, r: TrialResult) -> None:
        if config["--moe-runner-backend"] == "triton" and config["--kv-cache-dtype"] == "fp8_e4m3":
            r.fail(
                Stage.LAUNCHING,
                Category.INVALID_CONFIG,
                [
                    "AssertionError: moe_runner_backend=triton does not support "
                    "kv_cache_dtype=fp8_e4m3"
                ],
            )

    planner = DefaultPlanner(spec=spec())
    seen = drive(planner, judge)
    fails = [
        t
        for t in seen
        if t.config["--moe-runner-backend"] == "triton"
        and t.config["--kv-cache-dtype"] == "fp8_e4m3"
    ]
    assert len(fails) == 1
    assert all(
        p.config["--moe-runner-backend"] == "triton" and p.config["--kv-cache-dtype"] == "fp8_e4m3"
        for p in planner.pruned
    )


VLLM_SPEC = """
[engine]
name = "vllm"
[model]
path = "m"
[space]
"--attention-backend" = ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN"]
"--kv-cache-dtype" = ["auto", "fp8"]
"--max-num-seqs" = [64, 256]
[reference]
"--attention-backend" = "FLASH_ATTN"
"--kv-cache-dtype" = "auto"
"--max-num-seqs" = 64
"""


def test_evidence_naming_a_reference_value_prunes_the_combination() -> None:
    """vLLM refuses FLASH_ATTN (the reference's backend) with an FP8 KV cache; FP8 KV works
    with the other backends, so only the pair is pruned, not every FP8 configuration."""
    refusal = (
        "ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this "
        "configuration. Reason: ['kv_cache_dtype not supported']"
    )
    fast = speed({"FLASHINFER": 1.05, "TRITON_ATTN": 0.8, "fp8": 1.15, 256: 1.4})

    def judge(config: Config, r: TrialResult) -> None:
        fast(config, r)
        if config["--attention-backend"] == "FLASH_ATTN" and config["--kv-cache-dtype"] == "fp8":
            r.fail(Stage.READY, Category.INVALID_CONFIG, [refusal])

    planner = DefaultPlanner(spec=parse_spec(VLLM_SPEC))
    seen = drive(planner, judge)
    refused = [
        t.config
        for t in seen
        if t.config["--attention-backend"] == "FLASH_ATTN" and t.config["--kv-cache-dtype"] == "fp8"
    ]
    assert len(refused) == 1
    assert planner.pruned
    for p in planner.pruned:
        assert (p.config["--attention-backend"], p.config["--kv-cache-dtype"]) == (
            "FLASH_ATTN",
            "fp8",
        ), p
        assert "--attention-backend=FLASH_ATTN with --kv-cache-dtype=fp8" in p.reason
    best = planner.best()
    assert best is not None
    assert best.config == {
        "--attention-backend": "FLASHINFER",
        "--kv-cache-dtype": "fp8",
        "--max-num-seqs": 256,
    }


def test_a_crash_naming_only_reference_values_keeps_the_departures_in_the_culprit() -> None:
    space = SearchSpace(parse_spec(VLLM_SPEC))
    config: Config = {
        "--attention-backend": "FLASH_ATTN",
        "--kv-cache-dtype": "fp8",
        "--max-num-seqs": 64,
    }

    def crash(line: str) -> TrialResult:
        r = TrialResult(trial_id="t1", flags=dict(config))
        return r.fail(Stage.READY, Category.RUNTIME_CRASH, [line])

    plain = rule_from(crash("CUDA error: an illegal memory access"), config, space, [])
    # nothing named: the departure is blamed with the context it failed in
    assert plain is not None and plain.contextual and plain.combo == config
    assert plain.culprits == ("--kv-cache-dtype",)
    named = rule_from(crash("RuntimeError: flash_attn decode kernel failed"), config, space, [])
    assert named is not None
    # the reference's own backend is named: blame it together with the departure
    assert named.combo == {"--attention-backend": "FLASH_ATTN", "--kv-cache-dtype": "fp8"}


def test_oom_prunes_at_least_as_hungry() -> None:
    def judge(config: Config, r: TrialResult) -> None:
        if float(config["--mem-fraction-static"]) >= 0.9:
            r.fail(
                Stage.LAUNCHING, Category.OOM_GPU, ["torch.OutOfMemoryError: CUDA out of memory"]
            )

    planner = DefaultPlanner(spec=spec())
    seen = drive(planner, judge)
    hungry = [t for t in seen if float(t.config["--mem-fraction-static"]) >= 0.9]
    # the OOM at 0.9 with a bf16 KV cache leaves 0.9 with the smaller fp8 one to try
    assert [(t.config["--mem-fraction-static"], t.config["--kv-cache-dtype"]) for t in hungry] == [
        (0.9, "bf16"),
        (0.9, "fp8_e4m3"),
    ]
    assert {p.config["--mem-fraction-static"] for p in planner.pruned} == {0.9, 0.95}


def test_accuracy_regression_prunes_unless_tolerated() -> None:
    def judge(config: Config, r: TrialResult) -> None:
        if config["--kv-cache-dtype"] == "fp8_e4m3":
            r.fail(Stage.ACCURATE, Category.ACCURACY_REGRESSION, ["mean |delta logprob| 0.12"])

    strict = DefaultPlanner(spec=spec())
    drive(strict, judge)
    assert any(p.config["--kv-cache-dtype"] == "fp8_e4m3" for p in strict.pruned)
    lenient = DefaultPlanner(spec=spec('[checks]\ntolerate = ["--kv-cache-dtype"]\n'))
    drive(lenient, judge)
    assert not any("drifts" in p.reason for p in lenient.pruned)


def test_finds_the_best_of_a_separable_surface() -> None:
    planner = DefaultPlanner(spec=spec())
    drive(planner, speed({"triton": 1.3, "fp8_e4m3": 1.2, 0.95: 1.1}))
    best = planner.best()
    assert best is not None
    assert best.config == {
        "--moe-runner-backend": "triton",
        "--kv-cache-dtype": "fp8_e4m3",
        "--mem-fraction-static": 0.95,
    }


def test_trial_budget_ends_with_best_so_far() -> None:
    planner = DefaultPlanner(spec=spec("[plan]\nmax_trials = 3\n"))
    seen = drive(planner, speed({"triton": 1.3}))
    assert len(seen) == 3
    assert any("trial budget of 3 spent; best proven so far" in n for n in planner.notes)


def test_wall_budget_uses_trial_timings() -> None:
    def judge(config: Config, r: TrialResult) -> None:
        r.timings = {"total": 400.0}

    planner = DefaultPlanner(spec=spec("[plan]\nmax_wall_s = 1000\n"))
    seen = drive(planner, judge)
    assert len(seen) == 3
    assert any("wall-time budget" in n for n in planner.notes)


def test_halving_short_bench_then_full_for_the_best_third() -> None:
    planner = DefaultPlanner(spec=spec("[plan]\nhalving = true\n"))
    seen = drive(planner, speed({"triton": 1.3, "fp8_e4m3": 1.2}))
    short = [t for t in seen if t.bench_scale < 1]
    full = [t for t in seen if t.purpose == "full_bench"]
    assert short and all(t.bench_scale == 1 / 3 for t in short)
    assert len(full) == -(-len(short) // 3)
    assert all(t.bench_scale == 1.0 for t in full)


def test_repeat_top_repeats_the_best() -> None:
    planner = DefaultPlanner(spec=spec("[plan]\nrepeat_top = 2\n"))
    seen = drive(planner, speed({"triton": 1.3, "fp8_e4m3": 1.2}))
    repeats = [t for t in seen if t.purpose == "repeat"]
    best_two = {tuple(t.config.items()) for t in repeats[:2]}
    assert len(best_two) == 2  # each of the best two measured a second time first
    # then only until decided, never past plan.max_samples measurements of one
    counts = [sum(1 for t in seen if t.config == r.config) for r in repeats]
    assert max(counts) <= planner.spec.plan.max_samples
    assert "measured" in planner.notes[-1] and "more time(s)" in planner.notes[-1]


def test_excluded_configs_are_recorded() -> None:
    planner = DefaultPlanner(spec=spec('[plan]\nexclude = [{"--kv-cache-dtype" = "fp8_e4m3"}]\n'))
    seen = drive(planner, speed({}))
    assert all(t.config["--kv-cache-dtype"] == "bf16" for t in seen)
    assert sum(1 for p in planner.pruned if p.reason.startswith("excluded")) == 9


def test_budget_note_names_the_best_once_running_trials_report() -> None:
    """A budget stop with trials still running: the note is rewritten as they report, so
    the best it names is the best of every result (the one the sweep's winner is)."""
    planner = DefaultPlanner(spec=spec("[plan]\nmax_trials = 3\n"))

    def result(item: PlannedTrial, tid: str, tok_s: float) -> TrialResult:
        r = TrialResult(trial_id=tid, flags=dict(item.config))
        r.status, r.stage = Status.PASSED, Stage.PASSED
        r.metrics = {"output_tok_s": tok_s, "ttft_p50_ms": 100.0, "ttft_p99_ms": 150.0}
        return r

    (ref,) = planner.ask(1)
    planner.tell(ref, result(ref, "t1", 1000.0))
    first, second = planner.ask(2)
    planner.tell(first, result(first, "t2", 1100.0))
    assert planner.ask(1) == []  # three launched: the budget is spent, one still running
    stop = [n for n in planner.notes if "trial budget of 3 spent" in n]
    assert len(stop) == 1 and "best proven so far: t2" in stop[0]
    assert "1 of 1 trial(s) already running still to finish" in stop[0]
    planner.tell(second, result(second, "t3", 1500.0))
    stop = [n for n in planner.notes if "trial budget of 3 spent" in n]
    assert len(stop) == 1, planner.notes
    assert "best proven so far: t3" in stop[0]
    assert "1 trial(s) already running were let finish" in stop[0]


def test_best_counts_the_reference_run_first_where_no_candidate_is_it() -> None:
    """[[candidates]] without the reference: the sweep runs the reference before asking;
    the planner's best (its notes, its re-measuring) must weigh it like the sweep's winner."""
    planner = DefaultPlanner(
        spec=parse_spec(
            '[engine]\nname = "vllm"\n[model]\npath = "m"\n'
            '[reference]\n"--enforce-eager" = true\n'
            '[[candidates]]\n"--enforce-eager" = true\n"--speculative-config" = "ngram"\n'
            "[plan]\nmax_samples = 1\n"
        )
    )
    ref = PlannedTrial(planner.spec.reference_config(), "reference", 1.0)
    r = TrialResult(trial_id="t1", flags=dict(ref.config))
    r.status, r.stage = Status.PASSED, Stage.PASSED
    r.metrics = {"output_tok_s": 426.3, "ttft_p50_ms": 100.0, "ttft_p99_ms": 150.0}
    planner.tell(ref, r)  # not asked for: run first by the sweep
    (cand,) = planner.ask(1)
    assert "--speculative-config" in cand.config
    c = TrialResult(trial_id="t2", flags=dict(cand.config))
    c.status, c.stage = Status.PASSED, Stage.PASSED
    c.metrics = {"output_tok_s": 421.0, "ttft_p50_ms": 100.0, "ttft_p99_ms": 150.0}
    planner.tell(cand, c)
    assert planner.ask(1) == []
    best = planner.best()
    assert best is not None and best.trial_id == "t1"
    assert not any("winner t2" in n for n in planner.notes), planner.notes
