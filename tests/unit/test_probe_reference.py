"""``probe --reference RUN``: finding a run's stored reference answers, and the mistakes."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bringup.checks.drift_probe import stored_reference
from bringup.cli.main import cli
from bringup.spec import parse_spec
from bringup.store import Store, launch_key

SPEC = parse_spec(
    '[engine]\nname = "llama.cpp"\n[model]\npath = "m.gguf"\n'
    '[space]\n"--flash-attn" = ["off", "on"]\n[checks]\nmax_logprob_mad = 0.05\n'
)
ANSWERS = {"prompts": ["The sky is"], "max_tokens": 2, "answers": [], "forced": None}


def _run(store: Store) -> str:
    return store.create_run(
        spec_path="s.toml",
        spec_digest=SPEC.digest(),
        spec_json=SPEC.public_json(),
        engine="llama.cpp",
        fingerprint={"model_sha256": "abc"},
        fingerprint_key="fk",
        run_dir="runs",
    )


def test_the_reference_key_is_the_runs_reference_launch(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    run_id = _run(store)
    key = launch_key("llama.cpp", "abc", [], SPEC.reference_config())
    store.save_reference("fk", key, ANSWERS)
    ref, spec, found = stored_reference(store, run_id[:12])
    assert found == run_id and ref.prompts == ["The sky is"]
    assert spec.checks.max_logprob_mad == 0.05  # the run's own thresholds apply


def test_a_run_without_reference_answers_is_one_sentence_exit_2(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    run_id = _run(store)
    store.save_reference("another-fingerprint", "k", ANSWERS)
    store.close()
    args = ["probe", "http://127.0.0.1:9", "--reference", run_id, "--db", str(tmp_path / "b.db")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2
    assert "has no stored reference answers" in res.output
    assert "Traceback" not in res.output


def test_an_unknown_run_or_database_is_a_user_mistake(tmp_path: Path) -> None:
    missing = CliRunner().invoke(
        cli, ["probe", "http://127.0.0.1:9", "--reference", "r", "--db", str(tmp_path / "x.db")]
    )
    assert missing.exit_code == 2 and "does not exist" in missing.output
    Store(tmp_path / "b.db").close()
    unknown = CliRunner().invoke(
        cli, ["probe", "http://127.0.0.1:9", "--reference", "nope", "--db", str(tmp_path / "b.db")]
    )
    assert unknown.exit_code == 2 and "no run matches 'nope'" in unknown.output
