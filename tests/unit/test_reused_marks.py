"""A verdict reused from an earlier trial says so: in the sweep table and the report."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from bringup.cli.render import results_table
from bringup.report.model import load_report
from bringup.report.text import render_text
from bringup.spec import parse_spec
from bringup.store import Store
from bringup.sweep import SweepOutcome
from bringup.verdict import Category, Stage, Status, TrialResult

SPEC = parse_spec(
    '[engine]\nname = "llama.cpp"\n[model]\npath = "m"\n[space]\n"--flash-attn" = ["off", "on"]\n'
)


def _results(run_id: str) -> list[TrialResult]:
    ok = TrialResult(
        trial_id=f"{run_id}-t001",
        flags={"--flash-attn": "off"},
        status=Status.PASSED,
        stage=Stage.PASSED,
        metrics={"output_tok_s": 30.0},
    )
    bad = TrialResult(trial_id=f"{run_id}-t002", flags={"--flash-attn": "on"})
    bad.fail(Stage.READY, Category.RUNTIME_CRASH, ["boom"])
    return [ok, bad]


def test_the_sweep_table_marks_reused_rows_only() -> None:
    results = _results("r")
    outcome = SweepOutcome(
        "r",
        Path("."),
        results,
        None,
        SimpleNamespace(pruned=[], notes=[]),  # type: ignore[arg-type]
        "b1",
        {},
        reused={"r-t002": "old-t007"},
    )
    console = Console(width=100, record=True)
    console.print(results_table(outcome, SPEC))
    text = console.export_text()
    rows = [ln for ln in text.splitlines() if ln.strip().startswith(("1 ", "2 "))]
    assert "(reused)" in rows[1] and "(reused)" not in rows[0]
    assert "an earlier trial's verdict" in text


def test_the_report_names_the_trial_a_verdict_came_from(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    run_id = store.create_run(
        spec_path=None,
        spec_digest="d",
        spec_json=SPEC.public_json(),
        engine="llama.cpp",
        fingerprint={},
        fingerprint_key="fk",
        run_dir=str(tmp_path),
    )
    ok, bad = _results(run_id)
    kw = {"fingerprint_key": "fk", "engine": "llama.cpp", "engine_version": "b1"}
    store.save_trial(run_id, 1, ok, cfg_key="k1", **kw)  # type: ignore[arg-type]
    store.save_trial(run_id, 2, bad, cfg_key="k2", reused_from="old-t007", **kw)  # type: ignore[arg-type]
    store.finish_run(run_id, "done", ok.trial_id, [], [])
    text = render_text(load_report(store, run_id))
    assert "(1 reused from earlier trials, not run again)" in text
    assert "t002 (reused from old-t007)" in text
    assert "t001 (reused" not in text
