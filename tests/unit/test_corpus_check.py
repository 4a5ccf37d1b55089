"""The committed failure-log corpus passes its own check, and the check refuses bad cases."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_check", BENCH / "corpus_check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["corpus_check"] = mod
    spec.loader.exec_module(mod)
    return mod


cc = _module()


def _case(source: str, **over: Any) -> dict[str, Any]:
    case = {
        "id": "vllm-example-oom",
        "engine": "vllm",
        "category": "oom_gpu",
        "log": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "remedy": "lower --gpu-memory-utilization",
        "source": source,
        "gpu": None,
        "date": "2025-01-14",
    }
    case.update(over)
    return case


def _source_for(side: str) -> str:
    return next(f"o/r#{n}" for n in range(1, 100) if cc.side_of(f"o/r#{n}") == side)


def _write(
    tmp_path: Path, fit: list[dict[str, Any]], held: list[dict[str, Any]]
) -> dict[str, Path]:
    files = {"fit": tmp_path / "fit.jsonl", "heldout": tmp_path / "heldout.jsonl"}
    for name, cases in (("fit", fit), ("heldout", held)):
        files[name].write_text("".join(json.dumps(c) + "\n" for c in cases))
    return files


def test_committed_corpus_is_clean() -> None:
    problems, n = cc.check({split: cc.DATA / f"{split}.jsonl" for split in cc.SPLITS})
    assert problems == []
    assert n >= len(cc.legacy_ids())


def test_the_second_held_out_set_takes_any_unused_source(tmp_path: Path) -> None:
    files = _write(tmp_path, [_case(_source_for("fit"))], [])
    files["heldout2"] = tmp_path / "heldout2.jsonl"
    logs = {
        "fit": "ImportError: libcudart.so.12: cannot open shared object file",
        "heldout": "RuntimeError: CUDA error: no kernel image is available for execution",
    }
    fresh = [
        _case(_source_for(side), id=f"vllm-fresh-{side}", log=log) for side, log in logs.items()
    ]
    fresh = [dict(c, source=c["source"].replace("o/r", "o/fresh")) for c in fresh]
    files["heldout2"].write_text("".join(json.dumps(c) + "\n" for c in fresh))
    assert cc.check(files) == ([], 3)


def test_a_source_in_two_splits_is_refused(tmp_path: Path) -> None:
    fit = _source_for("fit")
    files = _write(tmp_path, [_case(fit)], [])
    files["heldout2"] = tmp_path / "heldout2.jsonl"
    again = _case(fit.upper(), id="vllm-other-log", log="RuntimeError: NCCL error " * 4)
    files["heldout2"].write_text(json.dumps(again) + "\n")
    problems, _ = cc.check(files)
    assert any(f"source {fit.upper()} is already in fit" in p for p in problems)


def test_the_third_held_out_set_shares_no_source_with_the_second(tmp_path: Path) -> None:
    files = _write(tmp_path, [_case(_source_for("fit"))], [])
    for split, log in (("heldout2", "ImportError: libcudart.so.12"), ("heldout3", "Segfault " * 5)):
        files[split] = tmp_path / f"{split}.jsonl"
        case = _case("o/later#7", id=f"vllm-{split}", log=log + " while loading the engine")
        files[split].write_text(json.dumps(case) + "\n")
    problems, n = cc.check(files)
    assert n == 3
    assert any("source o/later#7 is already in heldout2" in p for p in problems)


def test_a_good_case_passes(tmp_path: Path) -> None:
    problems, n = cc.check(_write(tmp_path, [_case(_source_for("fit"))], []))
    assert (problems, n) == ([], 1)


def test_bad_fields_are_named(tmp_path: Path) -> None:
    bad = _case(_source_for("fit"), engine="vLLM", category="oom", date="14/01/2025", extra=1)
    bad["source"] = "https://github.com/o/r/issues/3"
    problems, _ = cc.check(_write(tmp_path, [bad], []))
    text = "\n".join(problems)
    for word in ("engine", "category", "date", "source", "unknown field"):
        assert word in text


def test_case_on_the_wrong_side_is_refused(tmp_path: Path) -> None:
    problems, _ = cc.check(_write(tmp_path, [_case(_source_for("heldout"))], []))
    assert any("belongs to heldout" in p for p in problems)


def test_duplicates_are_refused_across_splits(tmp_path: Path) -> None:
    fit, held = _source_for("fit"), _source_for("heldout")
    again = _case(fit, id="vllm-example-oom-2")
    near = _case(held, id="vllm-example-oom-3", log=_case(fit)["log"].replace("2.00", "3.50"))
    problems, _ = cc.check(_write(tmp_path, [_case(fit), again], [near]))
    assert any("same source and log" in p for p in problems)
    assert any("nearly identical" in p for p in problems)
    problems, _ = cc.check(_write(tmp_path, [_case(fit), _case(fit, log="x" * 40)], []))
    assert any("id already used" in p for p in problems)


def test_a_log_with_a_credential_is_refused(tmp_path: Path) -> None:
    signed = "Error: max retries exceeded: Get https://x.r2.example/data?X-Amz-Signature=abc123"
    token = "401 Client Error for token hf_" + "a1B2c3D4e5" * 4
    for log in (signed, token):
        problems, _ = cc.check(_write(tmp_path, [_case(_source_for("fit"), log=log)], []))
        assert any("credential" in p for p in problems)


def test_the_fourth_held_out_set_shares_no_source_with_the_third(tmp_path: Path) -> None:
    files = _write(tmp_path, [_case(_source_for("fit"))], [])
    files["heldout2"] = tmp_path / "heldout2.jsonl"
    files["heldout2"].write_text("")
    for split, log in (("heldout3", "Segfault " * 5), ("heldout4", "CUDA error: invalid argument")):
        files[split] = tmp_path / f"{split}.jsonl"
        case = _case("o/later#9", id=f"vllm-{split}", log=log + " while loading the engine")
        files[split].write_text(json.dumps(case) + "\n")
    problems, n = cc.check(files)
    assert n == 3
    assert any("source o/later#9 is already in heldout3" in p for p in problems)


def test_the_fifth_held_out_set_shares_no_source_with_the_fourth(tmp_path: Path) -> None:
    files = _write(tmp_path, [_case(_source_for("fit"))], [])
    for split in ("heldout2", "heldout3"):
        files[split] = tmp_path / f"{split}.jsonl"
        files[split].write_text("")
    logs = (("heldout4", "CUDA error: invalid argument"), ("heldout5", "Killed " * 6))
    for split, log in logs:
        files[split] = tmp_path / f"{split}.jsonl"
        case = _case("o/later#11", id=f"vllm-{split}", log=log + " while serving requests")
        files[split].write_text(json.dumps(case) + "\n")
    problems, n = cc.check(files)
    assert n == 3
    assert any("source o/later#11 is already in heldout4" in p for p in problems)


def test_the_sixth_held_out_set_shares_no_source_with_the_fifth(tmp_path: Path) -> None:
    files = _write(tmp_path, [_case(_source_for("fit"))], [])
    for split in ("heldout2", "heldout3", "heldout4"):
        files[split] = tmp_path / f"{split}.jsonl"
        files[split].write_text("")
    logs = (("heldout5", "Killed " * 6), ("heldout6", "Illegal instruction (core dumped) " * 2))
    for split, log in logs:
        files[split] = tmp_path / f"{split}.jsonl"
        case = _case("o/later#13", id=f"vllm-{split}", log=log + " while loading the adapter")
        files[split].write_text(json.dumps(case) + "\n")
    problems, n = cc.check(files)
    assert n == 3
    assert any("source o/later#13 is already in heldout5" in p for p in problems)


def test_the_seventh_held_out_set_shares_no_source_with_the_sixth(tmp_path: Path) -> None:
    files = _write(tmp_path, [_case(_source_for("fit"))], [])
    for split in ("heldout2", "heldout3", "heldout4", "heldout5"):
        files[split] = tmp_path / f"{split}.jsonl"
        files[split].write_text("")
    logs = (
        ("heldout6", "Illegal instruction (core dumped) " * 2),
        ("heldout7", "address already in use " * 3),
    )
    for split, log in logs:
        files[split] = tmp_path / f"{split}.jsonl"
        case = _case("o/later#17", id=f"vllm-{split}", log=log + " while starting the server")
        files[split].write_text(json.dumps(case) + "\n")
    problems, n = cc.check(files)
    assert n == 3
    assert any("source o/later#17 is already in heldout6" in p for p in problems)


def test_where_the_label_was_read_is_log_or_thread(tmp_path: Path) -> None:
    good = _case(_source_for("fit"), label_from="thread")
    assert cc.check(_write(tmp_path, [good], [])) == ([], 1)
    bad = _case(_source_for("fit"), label_from="title")
    problems, _ = cc.check(_write(tmp_path, [bad], []))
    assert any("label_from must be one of log, thread" in p for p in problems)


def _corpus_add() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_add", BENCH / "corpus_add.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_seventh_header_field_records_where_the_label_was_read() -> None:
    add = _corpus_add()
    log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    text = f"@@ a-one | vllm | oom_gpu | o/r#1 | - | - | thread\n-\n{log}\n"
    text += f"@@ a-two | vllm | oom_gpu | o/r#2 | - | -\n-\n{log}\n"
    one, two = add.parse(text)
    assert one["label_from"] == "thread" and one["log"] == log
    assert "label_from" not in two
    try:
        add.parse(f"@@ a-three | vllm | oom_gpu | o/r#3 | - | - | title\n-\n{log}\n")
    except SystemExit as exc:
        assert "log|thread" in str(exc)
    else:
        raise AssertionError("a seventh field other than log or thread was taken")
