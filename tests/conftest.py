from __future__ import annotations

from pathlib import Path

import pytest

from bringup.testing.hogs import Slack, step_cost_s


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point bringup's state at a temp dir; keep the real model cache readable."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def slack() -> Slack:
    """Measured when the test starts, so a loaded machine gets proportionally more time."""
    return Slack(step_cost_s())
