"""bringup recheck on the real llama-server: a rebuilt library under the same version
string is seen in the fingerprint; the winner is re-run through the same gauntlet."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from bringup.recheck import recheck
from bringup.spec import Spec
from bringup.store import Store
from bringup.sweep import SweepOptions, prepare, run_sweep

pytestmark = pytest.mark.integration


def test_recheck_sees_a_rebuilt_library_and_reruns_the_winner(
    llama_server: str, spec: Spec, tmp_path: Path
) -> None:
    engine_dir = tmp_path / "engine"
    shutil.copytree(Path(llama_server).resolve().parent, engine_dir, symlinks=True)
    spec.engine.binary = str(engine_dir / Path(llama_server).name)
    spec.space = {"--flash-attn": ["off"]}  # the reference alone: one trial, one winner
    store = Store(tmp_path / "bringup.db")
    runs = tmp_path / "runs"
    outcome = asyncio.run(run_sweep(prepare(spec), store, SweepOptions(runs_dir=str(runs))))
    assert outcome.winner is not None

    same = asyncio.run(recheck(store, None, runs))
    assert same.fingerprint_changes == []
    assert same.winner_now.failure is None, same.winner_now.failure
    assert {f.name for f in same.figures} >= {"output_tok_s", "ttft_p50_ms"}

    lib = next(p for p in engine_dir.glob("libllama.so*") if not p.is_symlink())
    with lib.open("ab") as fh:  # a rebuild: new content, same file name and version string
        fh.write(b"\0")
    after = asyncio.run(recheck(store, None, runs))
    changed = " ".join(after.fingerprint_changes)
    assert "engine_sha256" in changed and "engine_version" not in changed
    assert after.winner_now.failure is None  # the appended byte changes no behaviour
    store.close()
