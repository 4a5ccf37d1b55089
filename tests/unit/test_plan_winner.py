"""Noise-aware winner: requirements, pooling of repeats, conservative choice on a real tie."""

from __future__ import annotations

from typing import Any

from bringup.contention import Contention
from bringup.plan import choose_winner
from bringup.plan.winner import requirement_failures
from bringup.spec import Spec, parse_spec
from bringup.student import t95
from bringup.verdict import Category, Stage, Status, TrialResult


def spec(require: str = "[]") -> Spec:
    return parse_spec(
        f"""
[engine]
name = "llama.cpp"
[model]
path = "m"
[space]
"--flash-attn" = ["off", "on"]
"--parallel" = [1, 4]
[reference]
"--flash-attn" = "off"
"--parallel" = 1
[objective]
require = {require}
"""
    )


def passed(tid: str, flags: dict[str, Any], tok_s: float, **metrics: Any) -> TrialResult:
    r = TrialResult(trial_id=tid, flags=flags, status=Status.PASSED, stage=Stage.PASSED)
    r.metrics = {"output_tok_s": tok_s, "ttft_p99_ms": 100.0, **metrics}
    return r


REF = {"--flash-attn": "off", "--parallel": 1}
FAST = {"--flash-attn": "on", "--parallel": 4}


def test_none_when_nothing_passed() -> None:
    failed = TrialResult(trial_id="t1", flags=REF).fail(Stage.LAUNCHING, Category.OOM_GPU)
    assert choose_winner([failed], spec()) is None


def test_highest_without_intervals() -> None:
    w = choose_winner([passed("a", REF, 100), passed("b", FAST, 104)], spec())
    assert w is not None and w.trial_id == "b" and w.reason.startswith("highest output_tok_s")


def test_overlapping_intervals_with_a_gap_that_matters_keep_the_faster() -> None:
    """3% ahead with overlapping intervals: not proven, so still undecided, but a 3% gap is
    no tie (it used to hand the win to the conservative one)."""
    results = [
        passed("a", REF, 100, output_tok_s_ci_lo=95, output_tok_s_ci_hi=105),
        passed("b", FAST, 103, output_tok_s_ci_lo=99, output_tok_s_ci_hi=107),
    ]
    w = choose_winner(results, spec())
    assert w is not None and w.trial_id == "b" and not w.contenders
    assert w.undecided == [(REF, 1)]


def test_overlapping_intervals_with_a_negligible_gap_prefer_the_conservative() -> None:
    results = [
        passed("a", REF, 100, output_tok_s_ci_lo=95.1, output_tok_s_ci_hi=104.9),
        passed("b", FAST, 100.5, output_tok_s_ci_lo=95.5, output_tok_s_ci_hi=105.5),
    ]
    w = choose_winner(results, spec())
    assert w is not None and w.trial_id == "a"
    assert "more conservative" in w.reason and w.contenders == ["b"]


def test_a_noisier_configuration_never_ties_with_a_steadier_best() -> None:
    """Within 1% and within noise, but the conservative one wandered (90..110) where the
    best measured steadily: it is no safer choice, so the best keeps the win."""
    results = [passed(f"r{i}", REF, v) for i, v in enumerate([90, 110, 100])]
    results += [passed(f"f{i}", FAST, v) for i, v in enumerate([100.5, 100.7, 100.3])]
    w = choose_winner(results, spec())
    assert w is not None and w.config == FAST and not w.contenders


def test_separated_intervals_keep_the_fastest() -> None:
    results = [
        passed("a", REF, 100, output_tok_s_ci_lo=98, output_tok_s_ci_hi=102),
        passed("b", FAST, 120, output_tok_s_ci_lo=118, output_tok_s_ci_hi=122),
    ]
    w = choose_winner(results, spec())
    assert w is not None and w.trial_id == "b" and not w.contenders


def test_repeats_are_pooled_into_a_t_interval() -> None:
    results = [passed(f"a{i}", REF, v) for i, v in enumerate([100, 101, 99])]
    results += [passed(f"b{i}", FAST, v) for i, v in enumerate([130, 131, 129])]
    w = choose_winner(results, spec())
    assert w is not None and w.config == FAST
    assert w.interval[0] < 130 < w.interval[1] and w.interval[1] - w.interval[0] < 10


def test_requirements_exclude_fast_but_slow_to_first_token() -> None:
    results = [passed("a", REF, 100), passed("b", FAST, 200, ttft_p99_ms=5000.0)]
    w = choose_winner(results, spec('["ttft_p99_ms < 2000"]'))
    assert w is not None and w.trial_id == "a"


def test_requirement_failures_reads_operators_and_missing_metrics() -> None:
    assert requirement_failures({"ttft_p99_ms": 10.0}, ["ttft_p99_ms < 20"]) == []
    assert requirement_failures({"ttft_p99_ms": 30.0}, ["ttft_p99_ms <= 20"]) == [
        "ttft_p99_ms <= 20"
    ]
    assert requirement_failures({}, ["output_tok_s >= 5"]) == ["output_tok_s >= 5"]


def test_short_benchmarks_yield_to_full_ones() -> None:
    results = [
        passed("short", FAST, 300, bench_scale=0.33),
        passed("full", FAST, 110, bench_scale=1.0),
        passed("ref", REF, 100, bench_scale=1.0),
    ]
    w = choose_winner(results, spec())
    assert w is not None and w.trial_id == "full" and w.value == 110


def _taken(share: float) -> Contention:
    return Contention(
        window="benchmark",
        wall_s=10.0,
        cores=2,
        others_cpu_s=20.0 * share,
        steal_s=0.0,
        ours_cpu_s=10.0,
        load1=1.0,
    )


def test_contended_measurement_is_not_ranked_as_comparable() -> None:
    """FAST measured at 100 quiet; REF at 80 while others took 45% of the CPU: REF's
    quiet speed may be up to 80 / 0.55 = 145, so the two overlap and the reason says why."""
    fast = passed("fast", FAST, 100, output_tok_s_ci_lo=98.0, output_tok_s_ci_hi=102.0)
    fast.contention = {"benchmark": _taken(0.02)}
    ref = passed("ref", REF, 80, output_tok_s_ci_lo=78.0, output_tok_s_ci_hi=82.0)
    ref.contention = {"benchmark": _taken(0.45)}
    w = choose_winner([fast, ref], spec())
    assert w is not None
    # REF could have been faster quietly, but that is not measured: FAST keeps the lead,
    # REF stays undecided (to be measured again) and the reason names the contention
    assert w.trial_id == "fast" and w.undecided == [(REF, 1)]
    assert "contention" in w.reason and "ref 45%" in w.reason
    # the same figures measured quietly: FAST is clearly faster
    ref.contention = {"benchmark": _taken(0.02)}
    w = choose_winner([fast, ref], spec())
    assert w is not None and w.trial_id == "fast" and "contention" not in w.reason


def test_contention_widens_latency_towards_lower() -> None:
    lat = spec().model_copy(deep=True)
    lat.objective.minimize = "ttft_p99_ms"
    a = passed("a", FAST, 100, ttft_p99_ms=100.0)
    b = passed("b", REF, 100, ttft_p99_ms=150.0)
    b.contention = {"benchmark": _taken(0.5)}  # quiet, b could be as low as 75 ms
    w = choose_winner([a, b], lat)
    assert w is not None and w.trial_id == "b" and "contention" in w.reason


def _three(mean: float, half95: float) -> list[float]:
    """Three samples whose 95% t-interval is ``mean ± half95`` (sd = half * sqrt(3) / t(2))."""
    sd = half95 * 3**0.5 / t95(2)
    return [mean - sd, mean, mean + sd]


def test_a_real_gap_between_overlapping_intervals_keeps_the_faster() -> None:
    """4873 ± 336 against 4499 ± 161 from 3 samples each: the intervals overlap, but
    Welch's t is about 4.3 on about 2.9 df (critical value about 3.3): a real gap. The
    noise the two repeats measured steadies each one's spread (a moderated variance), so
    the gap's interval is narrower than the unmoderated 250-374."""
    results = [passed(f"f{i}", FAST, v) for i, v in enumerate(_three(4873, 336))]
    results += [passed(f"r{i}", REF, v) for i, v in enumerate(_three(4499, 161))]
    w = choose_winner(results, spec())
    assert w is not None and w.config == FAST and not w.contenders
    assert w.margin is not None
    diff, half = w.margin
    assert abs(diff - 374) < 1e-6 and 150 < half < 374
    assert "margin +374" in w.reason


def test_a_real_tie_prefers_the_conservative() -> None:
    results = [passed(f"r{i}", REF, v) for i, v in enumerate([100, 103.9, 96.1])]
    results += [passed(f"f{i}", FAST, v) for i, v in enumerate([100.5, 96.5, 104.5])]
    w = choose_winner(results, spec())
    assert w is not None and w.config == REF and "more conservative" in w.reason
    assert w.margin is not None and abs(w.margin[0] - 0.5) < 1e-9 and w.margin[1] > 3


def test_a_3_percent_lead_within_noise_is_no_tie() -> None:
    """3 ± 3.3 (one standard error): within the noise, but a gap of 3% matters; the faster
    keeps the win and the conservative one stays undecided."""
    results = [passed(f"r{i}", REF, v) for i, v in enumerate([100, 104, 96])]
    results += [passed(f"f{i}", FAST, v) for i, v in enumerate([103, 99, 107])]
    w = choose_winner(results, spec())
    assert w is not None and w.config == FAST and not w.contenders
    assert w.margin is not None and w.margin[0] == 3 and w.margin[1] > 3
    assert w.undecided == [(REF, 3)]


def test_single_measurements_take_the_measured_run_to_run_noise() -> None:
    """A 4% lead of one measurement over another, where repeats measured 4% noise (3.2%
    with the 2% prior at equal weight), is within that noise: not decided (the other stays
    undecided), and no tie either."""
    third = {"--flash-attn": "on", "--parallel": 1}
    results = [passed("a", REF, 100), passed("b", FAST, 104)]
    results += [passed(f"c{i}", third, v) for i, v in enumerate([50, 52, 48])]
    w = choose_winner(results, spec())
    assert w is not None and w.trial_id == "b" and "more conservative" not in w.reason
    assert w.noise is not None and abs(w.noise[0] - 0.001**0.5) < 1e-9 and w.noise[1] == 4
    assert "run-to-run noise 3.2% (sd; 4.0% measured on repeats, df 2" in w.reason
    assert w.leader == (FAST, 1) and w.undecided == [(REF, 1)]
    assert w.margin is not None and w.margin[1] > 4  # the noise gives the gap its interval


def test_single_measurements_with_nothing_repeated_cannot_be_compared() -> None:
    w = choose_winner([passed("a", REF, 100), passed("b", FAST, 104)], spec())
    assert w is not None and w.trial_id == "b" and "no interval to compare" in w.reason
    assert w.noise is None and w.undecided == []


def test_a_gap_beyond_the_noise_keeps_the_best_though_not_yet_significant() -> None:
    """3 ± 1.6 (one standard error): not significant at 95% with 4 df, but no tie either."""
    results = [passed(f"r{i}", REF, v) for i, v in enumerate([100, 102, 98])]
    results += [passed(f"f{i}", FAST, v) for i, v in enumerate([103, 105, 101])]
    w = choose_winner(results, spec())
    assert w is not None and w.config == FAST and not w.contenders
    assert w.undecided == [(REF, 3)]
    assert "not significant at 95%: r0 may be as fast" in w.reason


def test_a_significant_lead_is_not_called_undecided() -> None:
    results = [passed(f"r{i}", REF, v) for i, v in enumerate([100, 101, 99])]
    results += [passed(f"f{i}", FAST, v) for i, v in enumerate([120, 121, 119])]
    w = choose_winner(results, spec())
    assert w is not None and w.config == FAST and w.undecided == []
    assert "not significant" not in w.reason and "margin +20 ±" in w.reason


def test_a_gap_surely_within_the_equivalence_margin_is_decided() -> None:
    results = [passed(f"r{i}", REF, v) for i, v in enumerate([1000, 1001, 999, 1000])]
    results += [passed(f"f{i}", FAST, v) for i, v in enumerate([1001, 1002, 1000, 1001])]
    w = choose_winner(results, spec())
    assert w is not None and w.undecided == []


def test_t95_interpolates_fractional_degrees_of_freedom() -> None:
    assert t95(2) == 4.303 and t95(1e9) == 1.96
    assert abs(t95(25) - 2.060) < 0.005  # tabulated Student t(0.975, 25)
    assert t95(3) < t95(2.5) < t95(2)


def test_the_interval_a_real_benchmark_stores_reaches_the_winner() -> None:
    """docs/gpu/vllm-h200-graphs: three repeats per launch, stored as the bench writes them.

    t009 (CUDA graphs, seed 1) measured best, but t004 is the same configuration with the
    seed greedy decoding never reads: pooled, 4129 and 4725. CUDA graphs without chunked
    prefill (t007, t008) pooled to 4437 and 4468: 0.6% apart, within noise, but the
    conservative one wandered by 14% between launches, so it is no safer choice and the
    steadier one wins.
    """
    import json
    from pathlib import Path

    from bringup.spec import load_spec

    root = Path(__file__).resolve().parents[2]
    spec = load_spec(root / "scripts/gpu/vllm/vllm-spec-h200-graphs.toml")
    data = json.loads((root / "docs/gpu/vllm-h200-graphs/trials.json").read_text())
    results = []
    for t in data["trials"]:
        if t["status"] == "passed":
            results.append(passed(t["id"], t["flags"], t["metrics"]["output_tok_s"]))
            results[-1].metrics = dict(t["metrics"])
    w = choose_winner(results, spec)
    assert w is not None and w.trial_id.endswith("-t008")
    assert w.config["--seed"] == 0  # the launch with the reference's control value is named
    assert w.config["--no-enable-chunked-prefill"] is True and not w.contenders


def test_launches_that_differ_only_in_a_control_are_one_configuration() -> None:
    raw: dict[str, Any] = {
        "engine": {"name": "llamacpp"},
        "model": {"path": "m.gguf"},
        "space": {"--parallel": [1, 4], "--seed": [0, 1]},
    }
    a = passed("a", {"--parallel": 4, "--seed": 0}, 100.0)
    b = passed("b", {"--parallel": 4, "--seed": 1}, 120.0)  # a lucky relaunch of a
    c = passed("c", {"--parallel": 1, "--seed": 0}, 108.0)
    alone = choose_winner([a, b, c], Spec.model_validate(raw))
    assert alone is not None and alone.trial_id == "b"  # three single measurements
    spec = Spec.model_validate({**raw, "checks": {"controls": ["--seed"]}})
    w = choose_winner([a, b, c], spec)
    # pooled, --parallel 4 is 110 with the launch-to-launch spread of a and b (df 1): no
    # lead over c's 108 is proven (c stays undecided), but 1.8% is no tie either; the
    # launch with the reference's seed is named
    assert w is not None and w.trial_id == "a" and not w.contenders
    assert w.undecided == [({"--parallel": 1, "--seed": 0}, 1)]


def test_a_spread_above_the_machine_noise_is_not_pulled_down() -> None:
    """The machine's noise (about 1%, from two steady configurations) steadies a spread
    below it, but a configuration that wandered by 15 keeps its own spread (df 2)."""
    third = {"--flash-attn": "on", "--parallel": 1}
    results = [passed(f"r{i}", REF, v) for i, v in enumerate([100, 101, 99])]
    results += [passed(f"t{i}", third, v) for i, v in enumerate([90, 91, 89])]
    results += [passed(f"f{i}", FAST, v) for i, v in enumerate([95, 110, 125])]
    w = choose_winner(results, spec())
    assert w is not None and w.config == FAST
    half = (w.interval[1] - w.interval[0]) / 2
    assert abs(half - t95(2) * 15 / 3**0.5) < 1e-6


def test_configurations_that_wander_do_not_make_the_machine_look_noisy() -> None:
    """Two steady configurations (1% sd) and two that wander (20%): the machine's noise is
    the steady ones' (a median of the four would be about 10%), with their 4 df."""
    from bringup.plan.winner import run_noise

    steady = [[100.0, 101.0, 99.0], [50.0, 50.5, 49.5]]
    wander = [[80.0, 100.0, 120.0], [40.0, 50.0, 60.0]]
    noise = run_noise(steady + wander)
    assert noise is not None
    assert abs(noise[0] - 0.01) < 1e-9 and noise[1] == 4
    # a third configuration as noisy as the others joins the pool
    noise = run_noise([*steady, [200.0, 202.5, 197.5], *wander])
    assert noise is not None and noise[1] == 6 and noise[0] < 0.012


def test_the_machine_noise_from_pairs_is_not_read_low() -> None:
    """Forty configurations measured twice at 3% noise: the pooled estimate is near 3% with
    about forty df (starting from the steadier half read 1-2%)."""
    import random

    from bringup.plan.winner import run_noise

    rng = random.Random(7)
    pairs = [[rng.gauss(100, 3), rng.gauss(100, 3)] for _ in range(40)]
    noise = run_noise(pairs)
    assert noise is not None
    assert 0.025 < noise[0] < 0.035 and noise[1] >= 38
    # two or three sets, as a sweep has after its first repeats: every one is pooled
    noise = run_noise([[100.0, 100.1], [100.0, 104.0], [50.0, 51.0, 52.0]])
    assert noise is not None and noise[1] == 4
