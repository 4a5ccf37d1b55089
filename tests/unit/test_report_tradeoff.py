"""Accuracy against speed in the text report: drift read against a control relaunch."""

from __future__ import annotations

import json
from pathlib import Path

from bringup.report import load_report, render_text
from bringup.report.tradeoff import threshold_hint, tradeoff_rows
from bringup.store import Store
from bringup.verdict import Category, Stage, Status, TrialResult

SPEC = {
    "engine": {"name": "vllm", "env": {}},
    "model": {"path": "/models/m"},
    "space": {"--kv-cache-dtype": ["auto", "fp8"], "--seed": [0, 1]},
    "objective": {"maximize": "output_tok_s"},
    "checks": {"controls": ["--seed"]},
}


def _acc(mad: float, lo: float, hi: float, agree: float) -> dict[str, object]:
    return {
        "passed": True,
        "logprob_mad": mad,
        "logprob_mad_ci": [lo, hi],
        "token_agreement": agree,
    }


def _store(tmp_path: Path, controls: bool = True) -> Store:
    store = Store(tmp_path / "b.db")
    spec = dict(SPEC) if controls else {k: v for k, v in SPEC.items() if k != "checks"}
    run_id = store.create_run(
        spec_path="s.toml",
        spec_digest="d",
        spec_json=json.dumps(spec),
        engine="vllm",
        fingerprint={"cpu": "c", "cores": 1},
        fingerprint_key="fp",
        run_dir=str(tmp_path),
    )
    kw = {"fingerprint_key": "fp", "engine": "vllm", "engine_version": "0.26.0"}
    auto0 = {"--kv-cache-dtype": "auto", "--seed": 0}
    auto1 = {"--kv-cache-dtype": "auto", "--seed": 1}
    fp8_0 = {"--kv-cache-dtype": "fp8", "--seed": 0}
    fp8_1 = {"--kv-cache-dtype": "fp8", "--seed": 1}
    trials = [
        ("reference", auto0, 400.0, None, None),
        ("explore", auto1, 402.0, _acc(0.012, 0.008, 0.016, 0.95), None),
        ("explore", fp8_0, 460.0, _acc(0.047, 0.039, 0.055, 0.5), None),
        ("explore", fp8_1, 455.0, _acc(0.16, 0.12, 0.2, 0.2), Category.ACCURACY_REGRESSION),
    ]
    for seq, (purpose, flags, tput, acc, cat) in enumerate(trials, 1):
        r = TrialResult(
            trial_id=f"{run_id}-t{seq:03d}",
            flags=flags,
            status=Status.PASSED,
            stage=Stage.PASSED,
            metrics={"output_tok_s": tput},
            checks={"accuracy": acc} if acc else {},
        )
        if cat is not None:
            r.fail(Stage.ACCURATE, cat, ["drift"])
        store.save_trial(run_id, seq, r, cfg_key=f"k{seq}", purpose=purpose, **kw)  # type: ignore[arg-type]
    store.finish_run(run_id, "done", None, [], [])
    return store


def test_drift_is_read_against_the_control_relaunch(tmp_path: Path) -> None:
    report = load_report(_store(tmp_path))
    rows = tradeoff_rows(report)
    assert [r.control for r in rows] == [True, False, False]
    control, fp8, worse = rows
    assert control.over_control == 1.0
    # gains are against every launch of the reference: itself (400) and the control (402)
    assert fp8.gain is not None and abs(fp8.gain - (460 - 401) / 401) < 1e-9
    assert control.within_noise and not fp8.within_noise
    assert fp8.over_control is not None and abs(fp8.over_control - 0.047 / 0.012) < 1e-9
    assert worse.verdict == "accuracy_regression"
    hint = threshold_hint(rows)
    assert hint is not None and "max_logprob_mad = 0.016" in hint and "2 of the" in hint
    text = render_text(report)
    assert "accuracy against speed" in text
    assert "t002 (control)" in text and "+14.7%" in text and "3.9x" in text
    assert "the reference launched 2 times" in text


def test_without_controls_the_report_says_how_to_measure_the_floor(tmp_path: Path) -> None:
    report = load_report(_store(tmp_path, controls=False))
    rows = tradeoff_rows(report)
    assert rows and not any(r.control for r in rows)
    assert threshold_hint(rows) is None
    assert "[checks] controls" in render_text(report)


def test_a_control_that_reproduces_the_reference_exactly_is_said_so(tmp_path: Path) -> None:
    from bringup.report.tradeoff import TradeoffRow

    report = load_report(_store(tmp_path))
    rows = tradeoff_rows(report)
    exact = [
        TradeoffRow(r.trial, r.objective, r.gain, 0.0, (0.0, 0.0), 1.0, None, r.control, "passed")
        if r.control
        else r
        for r in rows
    ]
    hint = threshold_hint(exact)
    assert hint is not None and "reproduced the reference's answers exactly" in hint
    assert "max_logprob_mad = 0.001" in hint and "(0 of the compared here)" in hint
