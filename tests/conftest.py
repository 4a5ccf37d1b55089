from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point bringup's state at a temp dir; keep the real model cache readable."""
    monkeypatch.chdir(tmp_path)
