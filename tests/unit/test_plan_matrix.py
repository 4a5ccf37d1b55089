"""The compatibility matrix from trial rows, and `bringup matrix` over a real store."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bringup.cli.matrix_cmd import matrix
from bringup.plan.matrix import DEPENDS, NOT_TRIED, WORKS, compatibility_matrix
from bringup.store import TrialRow
from bringup.verdict import Category, Stage, Status, TrialResult

H200 = {"gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0"}], "cpu": "x", "cores": 8}
SM120 = {"gpus": [{"name": "RTX PRO 6000", "compute_capability": "12.0"}], "cpu": "x", "cores": 8}


def row(
    fp: dict[str, object], flags: dict[str, object], status: str, category: str | None = None
) -> TrialRow:
    return TrialRow(
        id="t",
        flags=flags,
        status=Status(status),
        stage=Stage.PASSED if status == "passed" else Stage.READY,
        category=Category(category) if category else None,
        fingerprint=dict(fp),
        engine="sglang",
        engine_version="0.5.23",
    )


def test_cells_say_works_category_or_not_tried() -> None:
    m = compatibility_matrix(
        [
            row(H200, {"--moe": "trtllm"}, "passed"),
            row(SM120, {"--moe": "trtllm"}, "failed", "unsupported_hardware"),
            row(SM120, {"--moe": "cutlass"}, "passed"),
            row(SM120, {"--moe": "cutlass"}, "failed", "oom_gpu"),
            row(SM120, {"--moe": "cutedsl"}, "running"),
        ]
    )
    h200 = "1x NVIDIA H200 (sm90) / sglang 0.5.23"
    sm120 = "1x RTX PRO 6000 (sm120) / sglang 0.5.23"
    assert m.columns == [h200, sm120]
    assert m.cell("--moe", "trtllm", h200) == "works 1"
    assert m.verdict("--moe", "trtllm", h200) == WORKS
    assert m.cell("--moe", "trtllm", sm120) == "unsupported_hardware 1"
    # passed once, failed once, nothing else differs: both counted, no condition to name
    assert m.cell("--moe", "cutlass", sm120) == "works 1; oom_gpu 1"
    assert m.verdict("--moe", "cutlass", sm120) == DEPENDS
    assert m.cell("--moe", "cutlass", h200) == NOT_TRIED
    assert ("--moe", "cutedsl") not in m.rows
    assert m.table()[0] == ["flag", "value", h200, sm120]


def test_a_value_that_works_only_beside_another_says_under_which() -> None:
    rows = [
        row(H200, {"--fa": "on", "--ctv": "q8_0"}, "passed"),
        row(H200, {"--fa": "on", "--ctv": "q8_0", "--np": 4}, "passed"),
        row(H200, {"--fa": "off", "--ctv": "q8_0"}, "failed", "invalid_config"),
        row(H200, {"--fa": "off", "--ctv": "q8_0", "--np": 4}, "failed", "invalid_config"),
        row(H200, {"--fa": "off", "--ctv": "f16"}, "passed"),
    ]
    m = compatibility_matrix(rows)
    h200 = m.columns[0]
    assert m.verdict("--ctv", "q8_0", h200) == DEPENDS  # never plain "works"
    assert m.cell("--ctv", "q8_0", h200) == ("works 2 with --fa=on; invalid_config 2 with --fa=off")
    assert m.cell("--ctv", "f16", h200) == "works 1"
    assert m.cell("--fa", "off", h200) == (
        "works 1 with --ctv=f16; invalid_config 2 with --ctv=q8_0"
    )


def test_reused_rows_count_once() -> None:
    first = row(H200, {"--moe": "trtllm"}, "failed", "oom_gpu")
    copy = row(H200, {"--moe": "trtllm"}, "failed", "oom_gpu")
    copy.reused_from = "t"
    m = compatibility_matrix([first, copy])
    assert m.cell("--moe", "trtllm", m.columns[0]) == "oom_gpu 1"


def test_matrix_command_reads_the_store(tmp_path: Path) -> None:
    from bringup.store import Store

    db = tmp_path / "b.db"
    store = Store(db)
    run = store.create_run(
        spec_path=None,
        spec_digest="d",
        spec_json="{}",
        engine="sglang",
        fingerprint=SM120,
        fingerprint_key="k",
        run_dir=str(tmp_path),
    )
    ok = TrialResult(
        trial_id="t1", flags={"--moe": "cutlass"}, status=Status.PASSED, stage=Stage.PASSED
    )
    bad = TrialResult(trial_id="t2", flags={"--moe": "trtllm"}).fail(
        Stage.LAUNCHING, Category.UNSUPPORTED_HARDWARE
    )
    for seq, r in enumerate([ok, bad], 1):
        store.save_trial(
            run,
            seq,
            r,
            cfg_key=r.trial_id,
            fingerprint_key="k",
            engine="sglang",
            engine_version="0.5.23",
        )
    store.close()
    out = CliRunner().invoke(matrix, ["--db", str(db)])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "sm120" in lines[0]
    assert any("cutlass" in ln and "works 1" in ln for ln in lines)
    assert any("trtllm" in ln and "unsupported_hardware 1" in ln for ln in lines)
    assert lines[-1].startswith("cells: works: every decided trial")


def test_matrix_command_without_a_database(tmp_path: Path) -> None:
    out = CliRunner().invoke(matrix, ["--db", str(tmp_path / "none.db")])
    assert out.exit_code != 0
