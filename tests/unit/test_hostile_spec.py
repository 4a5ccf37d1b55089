"""Input that would make every trial fail or crash: one sentence, exit 2, before anything
launches (no run recorded, no engine started)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.testing.hostile import sim_spec


def _sweep(tmp_path: Path, spec: Path, *extra: str) -> tuple[int, str]:
    db = tmp_path / "b.db"
    res = CliRunner().invoke(cli, ["sweep", str(spec), "--db", str(db), *extra])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0, res.output
    assert "Traceback" not in res.output
    return res.exit_code, res.output


def _one_sentence(out: str) -> str:
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bringup: "), out
    return lines[0]


@pytest.mark.parametrize(
    ("bench", "says"),
    [
        ({"duration_s": -5}, "bench.duration_s"),
        ({"concurrency": [0]}, "bench.concurrency"),
        ({"request_rate": [-1.0]}, "bench.request_rate"),
        ({"concurrency": []}, "at least one concurrency level or request rate"),
    ],
)
def test_bench_values_are_checked_at_load(
    tmp_path: Path, bench: dict[str, object], says: str
) -> None:
    code, out = _sweep(tmp_path, sim_spec(tmp_path, bench=bench))
    assert code == 2 and says in _one_sentence(out)


def test_unknown_objective_metric(tmp_path: Path) -> None:
    spec = sim_spec(tmp_path, extra='[objective]\nmaximize = "tokens_per_sec"')
    code, out = _sweep(tmp_path, spec)
    assert code == 2 and "'tokens_per_sec' is not a metric" in _one_sentence(out)
    spec = sim_spec(tmp_path, extra='[objective]\nrequire = ["latency_ms < 5"]')
    code, out = _sweep(tmp_path, spec)
    assert code == 2 and "'latency_ms' is not a metric" in _one_sentence(out)


@pytest.mark.parametrize("value", ["0", "-1"])
def test_max_trials_must_be_positive(tmp_path: Path, value: str) -> None:
    code, out = _sweep(tmp_path, sim_spec(tmp_path), "--max-trials", value)
    assert code == 2 and "--max-trials" in out


def test_non_utf8_spec(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_bytes(b'[engine]\nname = "llama.cpp"\n# caf\xe9\n')
    code, out = _sweep(tmp_path, spec)
    assert code == 2 and "not UTF-8" in _one_sentence(out)


def test_flag_value_over_128_kib(tmp_path: Path) -> None:
    spec = sim_spec(tmp_path, space={"--chat-template": ["x" * 200_000]})
    code, out = _sweep(tmp_path, spec)
    assert code == 2 and "128 KiB per argument" in _one_sentence(out)


def test_engine_binary_without_execute_bit(tmp_path: Path) -> None:
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o644)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'[engine]\nname = "llama.cpp"\nbinary = "{binary}"\n[model]\npath = "{model}"\n'
        '[space]\n"--flash-attn" = ["on", "off"]\n'
    )
    code, out = _sweep(tmp_path, spec)
    assert code == 2 and "not executable" in _one_sentence(out)
