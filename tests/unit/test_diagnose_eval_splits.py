"""bench/diagnose_eval.py keeps every held-out split hidden: no case is printed from them.
The retired ones (read by rule writers) print their ids like fit."""

from __future__ import annotations

import importlib.util
import json
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


@pytest.mark.parametrize("split", ["heldout12", "heldout13"])
def test_verbose_is_refused_on_a_held_out_split(
    split: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ev.main(["--split", split, "--verbose"]) == 2
    assert f"refused for --split {split}" in capsys.readouterr().err


@pytest.mark.parametrize("split", ["heldout12", "heldout13"])
def test_the_later_held_out_splits_are_known_and_hidden(split: str) -> None:
    assert split in ev.SPLITS
    assert split in ev.HIDDEN


@pytest.mark.parametrize(
    "split",
    [
        *("heldout", "heldout2", "heldout3", "heldout4"),
        *("heldout5", "heldout6", "heldout7", "heldout8", "heldout9"),
        *("heldout10", "heldout11"),
    ],
)
def test_the_retired_splits_print_like_fit(split: str) -> None:
    assert split in ev.SPLITS
    assert split not in ev.HIDDEN
    retired = ev.cases_of("retired")
    assert {c["id"] for c in ev.cases_of(split)} <= {c["id"] for c in retired}


def test_an_unknown_split_is_a_user_mistake(capsys: pytest.CaptureFixture[str]) -> None:
    assert ev.main(["--split", "heldout14"]) == 2
    assert "heldout10" in capsys.readouterr().err


def _sealed_copy(tmp_path: Path) -> Path:
    """A file named like a sealed split, holding one synthetic case the rules get wrong."""
    case = {
        "id": "synthetic-case-id-never-printed",
        "engine": "vllm",
        "category": "oom_host",
        "log": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "remedy": None,
        "source": "example/example#1",
        "gpu": None,
        "date": None,
    }
    path = tmp_path / f"{ev.HIDDEN[-1]}.jsonl"
    path.write_text(json.dumps(case) + "\n")
    return path


def test_a_sealed_file_given_by_path_is_as_sealed_as_its_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sealed_copy(tmp_path)
    assert ev.main([str(path), "--verbose"]) == 2
    assert f"refused for {path.name}" in capsys.readouterr().err
    assert ev.main([str(path), "--rules-only"]) == 0
    out = capsys.readouterr().out
    assert "oom_host -> oom_gpu: 1" in out  # the miss is counted...
    assert "synthetic-case-id-never-printed" not in out  # ...but never named
    assert out.splitlines()[-1] == "accuracy=0.0000 n=1"


def test_an_empty_split_is_refused_not_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert ev.main([str(empty)]) == 2
    captured = capsys.readouterr()
    assert "holds no case yet" in captured.err
    assert "accuracy=" not in captured.out


def test_accuracy_is_split_by_where_the_label_was_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def case(label_from: str | None) -> dict[str, object]:
        base: dict[str, object] = {"id": "x", "engine": "vllm", "category": "oom_gpu"}
        return base if label_from is None else {**base, "label_from": label_from}

    results = [
        (case("log"), "oom_gpu", 0.9, []),
        (case("log"), "runtime_crash", 0.9, []),
        (case("thread"), "runtime_crash", 0.4, []),
        (case(None), "oom_gpu", 0.9, []),
    ]
    ev.report(results, show_ids=False)
    table = capsys.readouterr().out.split("label read from")[1].splitlines()[1:]
    assert [line.split() for line in table if line.strip()] == [
        ["log", "0.50", "2"],
        ["thread", "0.00", "1"],
        ["not", "recorded", "1.00", "1"],
    ]
    ev.report(results[3:], show_ids=False)
    assert "label read from" not in capsys.readouterr().out
