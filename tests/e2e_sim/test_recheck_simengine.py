"""bringup recheck on the simulated engine: an upgrade that keeps its version string but
regresses is seen in the fingerprint (the executable's hash) and fails the recheck."""

from __future__ import annotations

import asyncio
import stat
import sys
from pathlib import Path

from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.recheck import recheck
from bringup.store import Store
from bringup.sweep import SweepOptions, prepare, run_sweep

from .conftest import example_spec


def _engine(path: Path, world: Path) -> None:
    """The "engine binary": a launcher whose content names the world it serves."""
    path.write_text(
        f'#!/bin/sh\nBRINGUP_SIM_WORLD="{world}" exec "{sys.executable}" '
        '-m bringup.testing.simengine "$@"\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_recheck_sees_a_same_version_upgrade_that_regresses(tmp_path: Path) -> None:
    spec, world = example_spec("command-tgi", "example_tgi_qwen3_8b", tmp_path)
    v1 = Path(spec.engine.env.pop("BRINGUP_SIM_WORLD"))
    v2 = tmp_path / "next-version.json"
    world.performance.output_tok_s *= 0.5  # the next release, same version string: slower
    v2.write_text(world.model_dump_json(), encoding="utf-8")
    engine = tmp_path / "engine-server"
    _engine(engine, v1)
    assert spec.engine.command is not None
    spec.engine.command = [str(engine), *spec.engine.command[3:]]
    db = tmp_path / "bringup.db"
    store = Store(db)
    outcome = asyncio.run(
        run_sweep(prepare(spec), store, SweepOptions(runs_dir=str(tmp_path / "runs")))
    )
    assert outcome.winner is not None

    same = asyncio.run(recheck(store, None, tmp_path / "runs"))
    assert same.fingerprint_changes == [] and not same.regressed, [f.line() for f in same.figures]

    _engine(engine, v2)  # the upgrade: same path, same version string, new content
    store.close()
    result = CliRunner().invoke(cli, ["recheck", "--db", str(db), "--runs-dir", str(tmp_path)])
    print(result.output)
    assert result.exit_code == 1
    assert "engine_sha256" in result.output
    assert "output_tok_s" in result.output and "REGRESSION" in result.output
