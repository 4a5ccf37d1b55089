"""``bringup bench URL`` against the fake server in its own process."""

from __future__ import annotations

import json

from click.testing import CliRunner

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
    data = json.loads(out.output)
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
