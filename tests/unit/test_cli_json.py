"""``--json`` on ``sweep`` and ``launch``: stdout holds one JSON line a script can read,
secrets masked; without a terminal, ``launch`` prints whole lines.

The sweep and the trial are replaced by recorded outcomes (``run_sweep``/``launch_one``),
so these tests read the command's own output handling, not an engine.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

import bringup.cli.sweep_cmd as sweep_cmd
from bringup.cli.main import cli
from bringup.plan.winner import Winner
from bringup.server.process import EngineProcess
from bringup.sweep import SweepOutcome
from bringup.trial import LiveServer
from bringup.verdict import Category, Stage, Status, TrialResult

SECRET = "sk-do-not-print-4242"
SPEC = """
[engine]
name = "llama.cpp"
[model]
path = "{model}"
[space]
"--flash-attn" = ["on", "off"]
"""


def _spec(tmp_path: Path) -> Path:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    p = tmp_path / "s.toml"
    p.write_text(SPEC.format(model=model))
    return p


def _passed(tid: str, fa: str, tok_s: float) -> TrialResult:
    return TrialResult(
        trial_id=tid,
        flags={"--flash-attn": fa, "--api-key": SECRET},
        status=Status.PASSED,
        stage=Stage.PASSED,
        command=["llama-server", "--flash-attn", fa, "--api-key", SECRET],
        metrics={"output_tok_s": tok_s, "ttft_p50_ms": 12.0, "other": 1},
    )


def _prepared(monkeypatch: pytest.MonkeyPatch) -> None:
    def prepare(spec: Any) -> Any:
        return SimpleNamespace(spec=spec, engine_version="b1")

    monkeypatch.setattr(sweep_cmd, "prepare", prepare)


def test_sweep_json_is_one_object_with_every_trial_and_the_redacted_winner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = TrialResult(trial_id="r-t002", flags={"--flash-attn": "off"})
    failed.fail(Stage.READY, Category.OOM_HOST, ["out of memory"])
    results = [_passed("r-t001", "on", 40.0), failed]
    outcome = SweepOutcome(
        run_id="r",
        run_dir=tmp_path,
        results=results,
        winner=Winner("r-t001", results[0].flags, 40.0, (39.0, 41.0), "fastest"),
        planner=SimpleNamespace(pruned=[], notes=[]),  # type: ignore[arg-type]
        engine_version="b1",
        fingerprint={},
    )

    async def run_sweep(*args: Any) -> SweepOutcome:
        return outcome

    _prepared(monkeypatch)
    monkeypatch.setattr(sweep_cmd, "run_sweep", run_sweep)
    res = CliRunner().invoke(
        cli, ["sweep", str(_spec(tmp_path)), "--db", str(tmp_path / "b.db"), "--json"]
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 1, lines  # the table and progress went to stderr
    got = json.loads(lines[0])
    assert got["run_id"] == "r"
    assert [t["trial_id"] for t in got["trials"]] == ["r-t001", "r-t002"]
    assert got["trials"][1] == {
        "trial_id": "r-t002",
        "flags": {"--flash-attn": "off"},
        "status": "failed",
        "stage": "ready",
        "category": "oom_host",
        "metrics": {},
    }
    assert got["trials"][0]["metrics"] == {"output_tok_s": 40.0, "ttft_p50_ms": 12.0}
    assert got["winner"]["trial_id"] == "r-t001"
    assert got["winner"]["command"][:3] == ["llama-server", "--flash-attn", "on"]
    assert SECRET not in res.stdout and SECRET not in res.stderr
    assert "winner" in res.stderr


def _launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str
) -> tuple[int, str, str, EngineProcess]:
    """``launch`` whose trial passed and whose server (a real process) exits at once."""
    proc = EngineProcess([sys.executable, "-c", "pass"], tmp_path / "t.log")
    trial = _passed("r-t001", "on", 40.0)

    async def launch_one(*args: Any) -> tuple[TrialResult, LiveServer]:
        return trial, LiveServer("http://127.0.0.1:5005", proc.pid, proc)

    _prepared(monkeypatch)
    monkeypatch.setattr(sweep_cmd, "launch_one", launch_one)
    res = CliRunner().invoke(
        cli, ["launch", str(_spec(tmp_path)), "--db", str(tmp_path / "b.db"), *extra]
    )
    return res.exit_code, res.stdout, res.stderr, proc


def test_launch_json_prints_one_line_once_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, out, err, proc = _launch(tmp_path, monkeypatch, "--json")
    lines = out.splitlines()
    assert len(lines) == 1, lines
    got = json.loads(lines[0])
    assert got["url"] == "http://127.0.0.1:5005"
    assert got["pid"] == proc.pid
    assert got["trial_id"] == "r-t001" and got["status"] == "passed"
    assert SECRET not in out and SECRET not in err
    assert "exited on its own" in err  # the server's end is still said, on stderr


def test_launch_piped_puts_the_url_on_its_own_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, out, _, _ = _launch(tmp_path, monkeypatch)
    up = [line for line in out.splitlines() if "http://127.0.0.1:5005" in line]
    assert up and up[0].startswith("up http://127.0.0.1:5005"), out
    assert "elapsed" not in up[0]


def test_progress_without_a_terminal_keeps_every_finished_trial(tmp_path: Path) -> None:
    from rich.console import Console

    from bringup.cli.render import ProgressLine
    from bringup.spec import load_spec
    from bringup.sweep import SweepEvent

    spec = load_spec(str(_spec(tmp_path)))
    piped, tty = ProgressLine(spec, keep=None), ProgressLine(spec)
    for i in range(1, 19):
        r = _passed(f"r-t{i:03}", "on", 40.0)
        for line in (piped, tty):
            line.update(SweepEvent(i, 18, r, Stage.PASSED, "done", 0.0))

    def shown(line: ProgressLine) -> int:
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(line)
        return sum(" passed " in t for t in console.export_text().splitlines())

    assert shown(piped) == 18
    assert shown(tty) == 12


def _failed_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: bool, *extra: str
) -> tuple[int, str, list[Any]]:
    """``launch`` whose trial fails at the accuracy stage, its server kept only if asked."""
    seen: list[Any] = []
    trial = _passed("r-t001", "on", 40.0)
    trial.fail(Stage.ACCURATE, Category.ACCURACY_REGRESSION, ["answers differ from the reference"])

    async def launch_one(prep: Any, store: Any, config: Any, options: Any, *a: Any) -> Any:
        seen.append(options.keep_failed)
        if not options.keep_failed:
            return trial, None
        proc = EngineProcess([sys.executable, "-c", "pass"], tmp_path / "t.log")
        return trial, LiveServer("http://127.0.0.1:5006", proc.pid, proc)

    _prepared(monkeypatch)
    monkeypatch.setattr(sweep_cmd, "launch_one", launch_one)
    flags = ["--keep-failed"] if keep else []
    res = CliRunner().invoke(
        cli, ["launch", str(_spec(tmp_path)), "--db", str(tmp_path / "b.db"), *flags, *extra]
    )
    return res.exit_code, res.output, seen


def test_a_failed_trial_exits_1_not_the_user_mistake_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, seen = _failed_launch(tmp_path, monkeypatch, keep=False)
    assert seen == [False]
    assert code == 1, out
    assert "the trial did not pass" in out and "accuracy_regression" in out


def test_keep_failed_shows_the_failed_server_and_still_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, seen = _failed_launch(tmp_path, monkeypatch, True, "--json")
    assert seen == [True]
    assert code == 1, out
    assert "Kept up for inspection" in out
    line = next(t for t in out.splitlines() if t.startswith("{"))
    got = json.loads(line)
    assert got["url"] == "http://127.0.0.1:5006" and got["status"] == "failed"
    assert got["category"] == "accuracy_regression"
