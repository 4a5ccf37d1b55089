"""Reports: the run read back from a real SQLite store, text, JSON, CSV and HTML.

The store holds two passing configurations at two concurrencies, a garbage-output
failure whose model output and log line carry markup, an invalid-config failure, a
pruned configuration and an API key plus a token that must never show.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.report_cmd import report
from bringup.errors import BringupError
from bringup.plan.base import Pruned
from bringup.report import (
    load_report,
    render_html,
    render_text,
    trial_matrix,
    write_csv,
    write_json,
)
from bringup.store import Store
from bringup.verdict import Category, Stage, Status, TrialResult

API_KEY = "sk-live-abcdef123456"
HF_TOKEN = "hf_zyxwvu987654"
MODEL_OUTPUT = '<script>alert("pwned")</script><b>bold</b> !!!!!!!!'
LOG_LINE = "ggml_cuda_init: <img src=x onerror=alert(1)> failed"

SPEC = {
    "engine": {"name": "llama.cpp", "env": {}},
    "model": {"path": "/models/gemma.gguf"},
    "launch": {"args": ["-c", "2048"], "host": "127.0.0.1", "env": {"HF_TOKEN": HF_TOKEN}},
    "space": {"--flash-attn": ["on", "off"], "--cache-type-k": ["f16", "q8_0", "q4_0"]},
    "objective": {"maximize": "output_tok_s"},
}
FINGERPRINT = {
    "cpu": "Test CPU",
    "cores": 2,
    "gpus": [
        {"name": "RTX TEST", "compute_capability": "12.0", "driver": "580.1", "memory": "96 GiB"}
    ],
    "engine": "llama.cpp",
    "engine_version": "b1234",
    "model": "/models/gemma.gguf",
    "model_sha256": "ab" * 32,
}


def _metrics(c1: float, c4: float, ttft: float) -> dict[str, float]:
    m = {
        "output_tok_s": c4,
        "ttft_p50_ms": ttft,
        "ttft_p99_ms": ttft * 2,
        "itl_p50_ms": 9.0,
        "itl_p99_ms": 14.0,
        "e2e_p50_ms": 800.0,
        "e2e_p99_ms": 1200.0,
        "decode_tok_s_single": c1,
    }
    for tag, v in (("c1", c1), ("c4", c4)):
        m[f"{tag}.output_tok_s"] = v
        m[f"{tag}.ttft_p50_ms"] = ttft
    return m


def build_store(path: Path) -> tuple[Store, str]:
    store = Store(path)
    run_id = store.create_run(
        spec_path="demo.toml",
        spec_digest="d",
        spec_json=json.dumps(SPEC),
        engine="llama.cpp",
        fingerprint=FINGERPRINT,
        fingerprint_key="fp",
        run_dir=str(path.parent / "runs"),
    )
    kw = {"fingerprint_key": "fp", "engine": "llama.cpp", "engine_version": "b1234"}

    def cmd(fa: str, k: str) -> list[str]:
        return [
            "/opt/llama-server",
            "-m",
            "/models/gemma.gguf",
            "--host",
            "127.0.0.1",
            "--port",
            "8123",
            "-c",
            "2048",
            "--api-key",
            API_KEY,
            "--flash-attn",
            fa,
            "--cache-type-k",
            k,
        ]

    ref = TrialResult(
        trial_id=f"{run_id}-t001",
        flags={"--flash-attn": "off", "--cache-type-k": "f16"},
        status=Status.PASSED,
        stage=Stage.PASSED,
        command=cmd("off", "f16"),
        timings={"ready_s": 2.5},
        metrics=_metrics(40.0, 120.0, 90.0),
    )
    best = TrialResult(
        trial_id=f"{run_id}-t002",
        flags={"--flash-attn": "on", "--cache-type-k": "f16"},
        status=Status.PASSED,
        stage=Stage.PASSED,
        command=cmd("on", "f16"),
        timings={"ready_s": 2.1},
        metrics=_metrics(45.0, 150.0, 70.0),
    )
    garbage = TrialResult(
        trial_id=f"{run_id}-t003",
        flags={"--flash-attn": "on", "--cache-type-k": "q8_0"},
        stage=Stage.CORRECT,
        command=cmd("on", "q8_0"),
        log_path="/runs/t003.log",
        checks={
            "correctness": {
                "passed": False,
                "category": "garbage_output",
                "evidence": [],
                "results": [
                    {
                        "name": "capital",
                        "prompt": "The capital of France is",
                        "output": MODEL_OUTPUT,
                        "expectation": "contains 'Paris'",
                        "passed": False,
                        "detector": "repeated_punctuation",
                    }
                ],
            }
        },
    )
    garbage.fail(
        Stage.CORRECT,
        Category.GARBAGE_OUTPUT,
        [LOG_LINE, f"sent key {API_KEY}"],
        remedy="try --cache-type-k f16",
        detail="output is punctuation",
    )
    invalid = TrialResult(
        trial_id=f"{run_id}-t004",
        flags={"--flash-attn": "off", "--cache-type-k": "q8_0"},
        stage=Stage.LAUNCHING,
        command=cmd("off", "q8_0"),
    )
    invalid.fail(
        Stage.LAUNCHING,
        Category.INVALID_CONFIG,
        ["quantized K cache requires flash_attn"],
        remedy="use --flash-attn on",
    )
    for seq, r in enumerate((ref, best, garbage, invalid), 1):
        store.save_trial(run_id, seq, r, cfg_key=f"k{seq}", **kw)  # type: ignore[arg-type]
    pruned = [
        Pruned(
            {"--flash-attn": "off", "--cache-type-k": "q4_0"},
            f"{run_id}-t004",
            "quantized K cache needs flash attention, as t004 showed",
        )
    ]
    store.finish_run(run_id, "done", best.trial_id, ["planner: grid"], pruned)
    return store, run_id


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Store, str]:
    return build_store(tmp_path / "bringup.db")


def test_load_report_ranks_groups_and_masks(stored: tuple[Store, str]) -> None:
    store, run_id = stored
    rep = load_report(store, run_id[:10])
    assert rep.run_id == run_id
    assert rep.counts == {"passed": 2, "failed": 2, "pruned": 1}
    assert rep.winner is not None and rep.winner.id.endswith("t002")
    assert [t.id[-4:] for t in rep.passed()] == ["t002", "t001"]
    assert list(rep.failures()) == ["garbage_output", "invalid_config"]
    dumped = json.dumps([[t.to_dict() for t in rep.trials], rep.run], default=str)
    assert API_KEY not in dumped and HF_TOKEN not in dumped
    assert "--api-key" in rep.trials[0].command and "***" in rep.trials[0].command


def test_empty_database_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(BringupError, match="has no runs yet"):
        load_report(Store(tmp_path / "empty.db"))
    result = CliRunner().invoke(report, ["--db", str(tmp_path / "empty.db")])
    assert result.exit_code != 0
    assert isinstance(result.exception, BringupError)


def test_text_summary_has_every_part(stored: tuple[Store, str]) -> None:
    text = render_text(load_report(stored[0]))
    assert "verdicts: 2 passed, 2 failed, 1 pruned" in text
    assert re.search(r"winner: t002 +--flash-attn=on --cache-type-k=f16 +output_tok_s 150\.0", text)
    assert "garbage_output x1: t003 --flash-attn=on --cache-type-k=q8_0 (stage correct)" in text
    assert LOG_LINE in text
    assert "remedy: use --flash-attn on" in text
    assert "--cache-type-k=q4_0 by t004: quantized K cache needs" in text
    assert "1x RTX TEST (cc 12.0, driver 580.1)" in text and "b1234" in text
    assert API_KEY not in text


def test_json_and_csv_hold_every_trial(stored: tuple[Store, str], tmp_path: Path) -> None:
    rep = load_report(stored[0])
    data = json.loads(write_json(rep, tmp_path / "r.json").read_text())
    assert len(data["trials"]) == 4 and data["winner"].endswith("t002")
    assert data["pruned"][0]["by_trial"].endswith("t004")
    rows = list(csv.DictReader((write_csv(rep, tmp_path / "r.csv")).open()))
    assert [r["status"] for r in rows] == ["passed", "passed", "failed", "failed"]
    assert rows[1]["--flash-attn"] == "on" and rows[1]["c4.output_tok_s"] == "150.0"
    assert rows[2]["category"] == "garbage_output" and rows[2]["ready_s"] == ""
    raw = (tmp_path / "r.csv").read_text() + (tmp_path / "r.json").read_text()
    assert API_KEY not in raw and HF_TOKEN not in raw


def test_matrix_colours_each_configuration(stored: tuple[Store, str]) -> None:
    m = trial_matrix(load_report(stored[0]))
    assert m.row_axes == ["--flash-attn"] and m.col_axis == "--cache-type-k"
    cells = {
        (row[0], col): c.status
        for row, cs in m.rows
        for col, c in zip(m.col_values, cs, strict=True)
    }
    assert cells[("on", "f16")] == "passed" and cells[("on", "q8_0")] == "failed"
    assert cells[("off", "q4_0")] == "pruned" and cells[("on", "q4_0")] == "untried"
    assert m.hidden == 0


def test_html_escapes_model_output_and_log_lines(stored: tuple[Store, str]) -> None:
    html = render_html(load_report(stored[0]))
    assert "<script" not in html  # not even the planted one: it is escaped
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<img" not in html and "<b>bold" not in html
    assert html.count("<svg") == 2  # throughput and latency plots, inline
    assert not re.search(
        r"(src|href)=\"(https?:)?//|<link|@import|url\((?!#)", html
    )  # nothing fetched
    assert API_KEY not in html and HF_TOKEN not in html


def test_cli_writes_requested_files(stored: tuple[Store, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    args = [
        "--db",
        str(stored[0].path),
        "--json",
        str(out / "a.json"),
        "--csv",
        str(out / "a.csv"),
        "--html",
        str(out / "a.html"),
    ]
    result = CliRunner().invoke(report, args)
    assert result.exit_code == 0, result.output
    assert "winner: t002" in result.output
    assert {p.name for p in out.iterdir()} == {"a.json", "a.csv", "a.html"}


def test_text_report_says_first_that_the_reference_failed(tmp_path: Path) -> None:
    store = Store(tmp_path / "bringup.db")
    spec = SPEC | {"reference": {"--flash-attn": "off"}}
    run_id = store.create_run(
        spec_path="demo.toml",
        spec_digest="d",
        spec_json=json.dumps(spec),
        engine="llama.cpp",
        fingerprint=FINGERPRINT,
        fingerprint_key="fp",
        run_dir=str(tmp_path / "runs"),
    )
    ref = TrialResult(
        trial_id=f"{run_id}-t001", flags={"--flash-attn": "off", "--cache-type-k": "f16"}
    )
    ref.fail(Stage.ACCURATE, Category.RUNTIME_CRASH, ["POST /v1/completions answered 500"])
    other = TrialResult(
        trial_id=f"{run_id}-t002",
        flags={"--flash-attn": "on", "--cache-type-k": "f16"},
        status=Status.UNCHECKED,
        stage=Stage.BENCHMARKED,
    )
    kw = {"fingerprint_key": "fp", "engine": "llama.cpp", "engine_version": "b1234"}
    for seq, r in enumerate((ref, other), 1):
        store.save_trial(run_id, seq, r, cfg_key=f"k{seq}", **kw)  # type: ignore[arg-type]
    store.finish_run(run_id, "done", None, [], [])
    first = render_text(load_report(store)).splitlines()[0]
    assert first == (
        "the reference configuration failed: runtime_crash: POST /v1/completions answered 500;"
        " accuracy cannot be judged"
    )
    # a run whose reference passed says nothing of the kind
    assert "reference configuration failed" not in render_text(load_report(stored_ok(tmp_path)))


def stored_ok(tmp_path: Path) -> Store:
    return build_store(tmp_path / "ok.db")[0]
