"""One record for a failure: the classifier's rule id, confidence and implicated flags reach
the trial's Failure, the store (migration m002), the pruner and ``bringup matrix --rules``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

from bringup.cli.matrix_cmd import matrix
from bringup.diagnose import classify
from bringup.plan.pruning import rule_from
from bringup.plan.space import SearchSpace
from bringup.spec import Config, parse_spec
from bringup.store import Store
from bringup.store.migrations import m001_initial
from bringup.verdict import Category, Failure, Stage, TrialResult

FIXTURES = Path(__file__).parent / "fixtures"
REFUSED = (FIXTURES / "llamacpp_refused_ctv_q4_0_fa_off.log").read_text()

LLAMA_SPEC = """
[engine]
name = "llama.cpp"
[model]
path = "m.gguf"
[space]
"--flash-attn" = ["off", "on"]
"--cache-type-k" = ["f16", "q8_0"]
"--cache-type-v" = ["f16", "q4_0"]
[reference]
"--flash-attn" = "off"
"--cache-type-k" = "f16"
"--cache-type-v" = "f16"
"""


def test_the_classifier_names_the_deciding_rule_and_its_flags() -> None:
    d = classify(REFUSED, engine="llama.cpp", exit_code=1)
    assert d.category is Category.INVALID_CONFIG
    assert d.rule == "llama.cpp:quantized-v-cache-needs-flash-attn"
    assert d.flags == ["--flash-attn", "-fa", "--cache-type-v", "-ctv"]
    assert "decided by rule llama.cpp:quantized-v-cache-needs-flash-attn" in d.explain()
    failure = d.to_failure(Stage.READY, "process exited with code 1 before ready")
    assert (failure.rule, failure.confidence, failure.flags) == (d.rule, d.confidence, d.flags)
    assert failure.evidence == d.evidence and failure.remedy == d.remedy


def test_exit_signals_and_hangs_have_rule_ids_too() -> None:
    assert classify("loading\n", exit_code=-9).rule == "exit:SIGKILL"
    assert classify("Loading weights ...\n", engine="vllm").rule == "hang:loading weights"
    assert classify("", exit_code=1).rule == "generic:no-reason-in-log"


def test_the_pruner_reads_the_implicated_flags_before_the_text() -> None:
    space = SearchSpace(parse_spec(LLAMA_SPEC))
    config: Config = {"--flash-attn": "off", "--cache-type-k": "q8_0", "--cache-type-v": "q4_0"}
    evidence = ["the context could not be created"]  # names no flag and no value
    by_text = TrialResult(trial_id="t1", flags=dict(config)).fail(
        Stage.READY, Category.INVALID_CONFIG, evidence
    )
    text_rule = rule_from(by_text, config, space, [])
    # nothing named: the departures from the reference, together
    assert text_rule is not None
    assert text_rule.combo == {"--cache-type-k": "q8_0", "--cache-type-v": "q4_0"}
    f16_k = {"--flash-attn": "off", "--cache-type-k": "f16", "--cache-type-v": "q4_0"}
    assert not text_rule.matches(f16_k, space)
    declared = TrialResult(trial_id="t2", flags=dict(config)).fail_with(
        Failure(
            stage=Stage.READY,
            category=Category.INVALID_CONFIG,
            evidence=evidence,
            rule="llama.cpp:quantized-v-cache-needs-flash-attn",
            flags=["--flash-attn", "-fa", "--cache-type-v", "-ctv"],
        )
    )
    rule = rule_from(declared, config, space, [])
    assert rule is not None
    assert rule.combo == {"--flash-attn": "off", "--cache-type-v": "q4_0"}
    assert rule.matches(
        {"--flash-attn": "off", "--cache-type-k": "f16", "--cache-type-v": "q4_0"}, space
    )


def _save(store: Store, run: str, result: TrialResult) -> None:
    store.save_trial(
        run,
        1,
        result,
        cfg_key="c",
        fingerprint_key="k",
        engine="llama.cpp",
        engine_version="b1",
    )


def test_the_store_keeps_rule_confidence_and_flags_and_matrix_names_the_rule(
    tmp_path: Path,
) -> None:
    db = tmp_path / "b.db"
    store = Store(db)
    run = store.create_run(
        spec_path=None,
        spec_digest="d",
        spec_json="{}",
        engine="llama.cpp",
        fingerprint={"cpu": "x", "cores": 2, "gpus": []},
        fingerprint_key="k",
        run_dir=str(tmp_path),
    )
    d = classify(REFUSED, engine="llama.cpp", exit_code=1)
    config = {"--flash-attn": "off", "--cache-type-v": "q4_0"}
    result = TrialResult(trial_id="t1", flags=config).fail_with(d.to_failure(Stage.READY))
    _save(store, run, result)
    back = store.decided("c", "k")
    assert back is not None and back.failure is not None
    assert back.failure.rule == "llama.cpp:quantized-v-cache-needs-flash-attn"
    assert back.failure.confidence == d.confidence
    assert back.failure.flags == d.flags
    store.close()
    out = CliRunner().invoke(matrix, ["--db", str(db), "--rules"])
    assert out.exit_code == 0, out.output
    assert any(
        "q4_0" in ln and "invalid_config 1 (llama.cpp:quantized-v-cache-needs-flash-attn)" in ln
        for ln in out.output.splitlines()
    )
    plain = CliRunner().invoke(matrix, ["--db", str(db)])
    assert "quantized-v-cache" not in plain.output


def test_migration_adds_the_columns_to_an_old_store(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied REAL)")
    m001_initial(con)
    con.execute("INSERT INTO _migrations VALUES ('m001_initial', 0)")
    con.commit()
    con.close()
    store = Store(db)
    columns = {row[1] for row in store.db.execute("PRAGMA table_info(trials)")}
    assert {"rule", "confidence", "implicated_json"} <= columns
    store.close()
