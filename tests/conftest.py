from __future__ import annotations

import signal
from pathlib import Path

import pytest

from bringup.testing.hogs import Slack, step_cost_s

# A test suite started as a background job of a non-interactive shell (`make test &`, CI
# runners, nohup) inherits SIGINT ignored, and so does every process it starts: the tests
# that press Ctrl-C on bringup would then test the shell, not bringup. A handled signal is
# reset to its default across exec, so a handler here gives each child a normal Ctrl-C.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point bringup's state at a temp dir; keep the real model cache readable."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def slack() -> Slack:
    """Measured when the test starts, so a loaded machine gets proportionally more time."""
    return Slack(step_cost_s())
