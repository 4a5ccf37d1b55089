"""The sweep's result table: readable at 80 columns, contention shown and warned about."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from bringup.cli.render import flag_legend, print_outcome
from bringup.cli.sweep_cmd import demo_spec
from bringup.contention import Contention
from bringup.plan import make_planner
from bringup.plan.winner import choose_winner
from bringup.sweep import SweepOutcome
from bringup.verdict import Category, Stage, Status, TrialResult

QUIET = Contention(
    window="benchmark",
    wall_s=10,
    cores=2,
    others_cpu_s=0.4,
    steal_s=0,
    ours_cpu_s=19,
    load1=2.1,
)
BUSY = QUIET.model_copy(update={"others_cpu_s": 9.0, "load1": 4.3})


def _outcome() -> tuple[SweepOutcome, object]:
    spec = demo_spec()
    ref = spec.reference_config()
    passed = TrialResult(
        trial_id="r-t001",
        flags=ref | {"--flash-attn": "on", "--cache-type-k": "q8_0"},
        status=Status.PASSED,
        stage=Stage.PASSED,
        metrics={
            "output_tok_s": 85.5,
            "decode_tok_s_single": 40.2,
            "ttft_p50_ms": 120.0,
            "ttft_p99_ms": 300.0,
        },
        contention={"benchmark": QUIET},
        command=["llama-server", "--flash-attn", "on"],
    )
    busy = passed.model_copy(
        update={
            "trial_id": "r-t002",
            "flags": ref | {"--cache-type-v": "q4_0", "--threads": 1},
            "contention": {"benchmark": BUSY},
        }
    )
    failed = TrialResult(trial_id="r-t003", flags=ref | {"--cache-type-k": "q4_0"}).fail(
        Stage.ACCURATE,
        Category.ACCURACY_REGRESSION,
        ["greedy token agreement 0.41 < 0.90 over 6 prompts against the reference"],
    )
    results = [passed, busy, failed]
    outcome = SweepOutcome(
        "r",
        Path("runs/r"),
        results,
        choose_winner(results, spec),
        make_planner(spec, "grid"),
        "b1234",
        {},
    )
    return outcome, spec


def test_every_flag_is_readable_at_80_columns() -> None:
    outcome, spec = _outcome()
    console = Console(width=80, record=True, color_system=None)
    print_outcome(console, outcome, spec)  # type: ignore[arg-type]
    text = console.export_text()
    assert "…" not in text, text
    assert max(len(line) for line in text.splitlines() if not line.startswith("llama")) <= 80
    legend = flag_legend(spec)  # type: ignore[arg-type]
    assert legend == {
        "--flash-attn": "fa",
        "--cache-type-k": "ctk",
        "--cache-type-v": "ctv",
        "--parallel": "p",
        "--threads": "t",
    }
    assert "ctk=--cache-type-k" in text and "fa=on" in text and "ctv=q4_0" in text
    assert "agreement 0.41" in text  # the decisive line wraps, it is not cut


def test_contended_benchmark_is_flagged_and_warned() -> None:
    outcome, spec = _outcome()
    console = Console(width=80, record=True, color_system=None)
    print_outcome(console, outcome, spec)  # type: ignore[arg-type]
    text = console.export_text()
    assert "98%" in text  # 0.4 CPU-s of 20 taken by others
    assert "55%!" in text  # 9 of 20 taken: contended
    warnings = [line for line in text.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "r-t002" in warnings[0] and "lower bound" in text


def test_legend_keeps_colliding_initials_apart() -> None:
    spec = demo_spec().model_copy(
        update={"space": {"--cache-type": ["a"], "--ctx-type": ["b"], "--c-t": ["c"]}}
    )
    legend = flag_legend(spec)
    assert len(set(legend.values())) == 3


def test_failed_reference_is_said_first_and_nothing_unchecked_shows_passed() -> None:
    spec = demo_spec()
    ref = spec.reference_config()
    reference = TrialResult(trial_id="r-t001", flags=ref).fail(
        Stage.ACCURATE,
        Category.RUNTIME_CRASH,
        ["POST /v1/completions answered 500: internal error"],
    )
    unchecked = TrialResult(
        trial_id="r-t002",
        flags=ref | {"--flash-attn": "on"},
        status=Status.UNCHECKED,
        stage=Stage.BENCHMARKED,
        metrics={"output_tok_s": 90.0, "ttft_p99_ms": 200.0},
    )
    results = [reference, unchecked]
    winner = choose_winner(results, spec)
    assert winner is None  # an unchecked configuration never wins
    outcome = SweepOutcome(
        "r", Path("runs/r"), results, winner, make_planner(spec, "grid"), "b1", {}
    )
    console = Console(width=80, record=True, color_system=None)
    print_outcome(console, outcome, spec)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("the reference configuration failed: runtime_crash")
    assert "accuracy cannot be judged" in " ".join(lines[:2])
    table_rows = [line for line in lines if line.lstrip().startswith(("1 ", "2 "))]
    assert not any("passed" in row for row in table_rows)
    assert "unchecked" in table_rows[1]
    summary = next(line for line in lines if line.startswith("verdicts:"))
    assert "passed" not in summary and "unchecked 1" in summary
    said = " ".join(line.strip() for line in lines)
    assert "no winner:" in said and "because the reference failed" in said
