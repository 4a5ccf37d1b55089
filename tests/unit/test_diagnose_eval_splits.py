"""bench/diagnose_eval.py keeps both held-out splits hidden: no case is printed from them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("diagnose_eval", BENCH / "diagnose_eval.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["diagnose_eval"] = mod
    spec.loader.exec_module(mod)
    return mod


ev = _module()


@pytest.mark.parametrize("split", ["heldout", "heldout2"])
def test_verbose_is_refused_on_a_held_out_split(
    split: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ev.main(["--split", split, "--verbose"]) == 2
    assert f"refused for --split {split}" in capsys.readouterr().err


def test_the_second_held_out_split_is_known_and_hidden() -> None:
    assert "heldout2" in ev.SPLITS
    assert "heldout2" in ev.HIDDEN


def test_an_unknown_split_is_a_user_mistake(capsys: pytest.CaptureFixture[str]) -> None:
    assert ev.main(["--split", "heldout3"]) == 2
    assert "heldout2" in capsys.readouterr().err
