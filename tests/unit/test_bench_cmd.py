"""``bringup bench URL`` against the fake server in its own process."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bringup.bench import runner
from bringup.cli.bench_cmd import bench
from bringup.testing.fakeserver import FakeServerConfig, FakeServerProcess


def test_bench_prints_a_table_and_json() -> None:
    runner = CliRunner()
    with FakeServerProcess(FakeServerConfig(event_rate=500)) as fake:
        table = runner.invoke(
            bench, [fake.url, "-c", "1,2", "--requests", "3", "--output-tokens", "5"]
        )
        assert table.exit_code == 0, table.output
        assert "c1" in table.output and "c2" in table.output and "fake-model" in table.output
        out = runner.invoke(
            bench, [fake.url, "--rate", "20", "--requests", "3", "--output-tokens", "4", "--json"]
        )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)  # progress lines went to stderr
    assert [lv["tag"] for lv in data["levels"]] == ["r20"]  # --rate alone: no closed loop
    assert data["levels"][0]["metrics"]["completed"] == 3
    assert data["summary"]["error_rate"] == 0.0
    assert data["config"]["output_tokens"] == 4


def test_a_server_failing_every_request_exits_non_zero_with_one_sentence() -> None:
    with FakeServerProcess(FakeServerConfig(fail_every=1)) as fake:
        result = CliRunner().invoke(bench, [fake.url, "--requests", "2", "--warmup", "0"])
    assert result.exit_code == 1
    assert f"no request to {fake.url} succeeded ({{'http_500': 2}})" in result.output


def test_bad_levels_are_usage_errors() -> None:
    result = CliRunner().invoke(bench, ["http://127.0.0.1:9", "-c", "0"])
    assert result.exit_code == 2
    assert "concurrency" in result.output


def test_json_is_one_line_on_stdout_and_progress_lines_go_to_stderr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a window of 2 requests x 10 tokens at 20 tokens/s lasts at least a second: five beats
    monkeypatch.setattr(runner, "HEARTBEAT_S", 0.2)
    with FakeServerProcess(FakeServerConfig(event_rate=20)) as fake:
        args = ["-c", "1", "--requests", "2", "--output-tokens", "10", "--warmup", "0"]
        res = CliRunner().invoke(bench, [fake.url, *args, "--json"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["levels"][0]["metrics"]["completed"] == 2
    progress = res.stderr.splitlines()
    assert progress[0] == "bench c1 1/1: measuring"
    assert any(p.startswith("bench c1 1/1: still measuring") for p in progress)
    assert "bench c1 1/1: 2 ok, 0 failed" in progress
    assert any(p.startswith("bench c1 1/1: done in") for p in progress)
