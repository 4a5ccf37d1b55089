"""``bringup diagnose`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bringup.cli.diagnose_cmd import diagnose

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"


def test_json_from_file(tmp_path: Path) -> None:
    log = tmp_path / "trial.log"
    log.write_text("loading\n" + OOM)
    result = CliRunner().invoke(diagnose, [str(log), "--engine", "vllm", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {
        "category",
        "evidence",
        "remedy",
        "confidence",
        "guessing",
        "transient",
        "learned",
    }
    assert data["learned"] is False  # a rule decided
    assert data["category"] == "oom_gpu"
    assert data["guessing"] is False
    assert data["evidence"] == [OOM.strip()]
    assert 0.0 <= data["confidence"] <= 1.0


def test_stdin_and_exit_code_human_output() -> None:
    result = CliRunner().invoke(diagnose, ["-", "--exit-code", "137"], input="loading\n")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("oom_host")
    assert "SIGKILL" in result.output
    assert "try:" in result.output


def test_engine_alias_and_hang(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        diagnose, ["-", "--engine", "tensorrt-llm", "--json"], input="Loading weights ...\n"
    )
    data = json.loads(result.output)
    assert data["category"] == "startup_timeout_or_hang"
    assert data["evidence"][0] == "stage reached: loading weights"


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(diagnose, [str(tmp_path / "nope.log")])
    assert result.exit_code == 2
