"""Smaller hostile inputs: a model that is not GGUF or is a folder, run ids that look like
SQL LIKE patterns, a 50 MB single-line log, a server that accepts and never answers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.diagnose.logtext import MAX_LINE
from bringup.store import Store

SPEC = '[engine]\nname = "llama.cpp"\n[model]\npath = "{model}"\n[space]\n"-fa" = ["on", "off"]\n'


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res.exit_code, res.output


@pytest.mark.parametrize("kind", ["text", "folder"])
def test_a_model_that_cannot_load_is_refused_before_any_launch(tmp_path: Path, kind: str) -> None:
    model = tmp_path / "model.gguf"
    if kind == "text":
        model.write_text("this is not a model\n")
    else:
        model.mkdir()
        (model / "inner.gguf").write_bytes(b"GGUF" + bytes(60))
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(model=model))
    code, out = _run("sweep", str(spec), "--db", str(tmp_path / "b.db"))
    assert code == 2
    assert ("not a GGUF file" if kind == "text" else "is a directory (it holds: inner.gguf)") in out
    assert not (tmp_path / "b.db").exists()


def test_run_ids_are_literal_not_like_patterns(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    store = Store(db)
    store.create_run(
        spec_path=None, spec_digest="d", spec_json="{}", engine="e", fingerprint={},
        fingerprint_key="f", run_dir="",
    )  # fmt: skip
    run_id = store.run()["id"]  # type: ignore[index]
    store.close()
    for ref in ("%", "_", run_id[:3] + "%", "2%"):
        code, out = _run("report", ref, "--db", str(db))
        assert code == 2 and "no run matches" in out, (ref, out)
        code, out = _run("deploy", ref, "--db", str(db), "--to", "script")
        assert code == 2 and "no run or trial matches" in out, (ref, out)
    code, out = _run("report", run_id[:8], "--db", str(db))  # a real prefix still works
    assert code == 0 and run_id in out


def test_diagnose_of_a_huge_single_line_log_is_bounded(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    line = "E llama: CUDA error: out of memory " + "[garbage=1] " * 4_200_000  # ~50 MB
    log.write_text(line + "\n")
    code, out = _run("diagnose", str(log))
    assert code == 0 and "out of memory" in out
    assert len(out) < 4 * MAX_LINE  # the evidence line was cut, not printed whole
    assert "characters cut" in out


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except TimeoutError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield int(srv.getsockname()[1])
    finally:
        stop.set()
        t.join(timeout=5)
        for c in held:
            c.close()
        srv.close()


def test_bench_against_a_server_that_never_answers_ends_on_its_timeout(silent_server: int) -> None:
    code, out = _run("bench", f"http://127.0.0.1:{silent_server}", "--timeout", "2")
    assert code == 1 and "sent no answer to GET /v1/models within 2 s" in out
