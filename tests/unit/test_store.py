from __future__ import annotations

from pathlib import Path

from bringup.plan.base import Pruned
from bringup.store import Store, launch_key
from bringup.verdict import Category, Stage, Status, TrialResult


def _run(store: Store) -> str:
    return store.create_run(
        spec_path="s.toml",
        spec_digest="d",
        spec_json="{}",
        engine="llama.cpp",
        fingerprint={"cpu": "x"},
        fingerprint_key="fp1",
        run_dir="runs/x",
    )


def test_wal_and_progressive_rows(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    run_id = _run(store)
    key = launch_key("llama.cpp", "sha", ["-c", "2048"], {"-fa": "on"})
    r = TrialResult(trial_id="t1", flags={"-fa": "on"})
    kw = dict(cfg_key=key, fingerprint_key="fp1", engine="llama.cpp", engine_version="1")
    store.save_trial(run_id, 1, r, **kw)  # type: ignore[arg-type]
    # a second connection sees the row at once (nothing buffered)
    other = Store(tmp_path / "b.db")
    assert other.trials(run_id)[0].status == "running"
    assert store.decided(key, "fp1") is None
    r.stage = Stage.READY
    r.fail(
        Stage.READY,
        Category.INVALID_CONFIG,
        ["quantized V cache requires flash_attn"],
        "use -fa on",
    )
    store.save_trial(run_id, 1, r, **kw)  # type: ignore[arg-type]
    got = other.decided(key, "fp1")
    assert got is not None and got.status is Status.FAILED
    assert got.failure is not None and got.failure.category is Category.INVALID_CONFIG
    assert got.failure.remedy == "use -fa on"
    assert other.decided(key, "other-fingerprint") is None


def test_launch_key_ignores_flag_order_not_values() -> None:
    a = launch_key("e", "m", [], {"-a": 1, "-b": 2})
    assert a == launch_key("e", "m", [], {"-b": 2, "-a": 1})
    assert a != launch_key("e", "m", [], {"-a": 1, "-b": 3})
    assert a != launch_key("e", "m", ["-c", "1"], {"-a": 1, "-b": 2})


def test_interrupt_and_finish(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    run_id = _run(store)
    store.save_trial(
        run_id,
        1,
        TrialResult(trial_id="t1", flags={}),
        cfg_key="k",
        fingerprint_key="fp1",
        engine="e",
        engine_version="1",
    )
    assert store.mark_interrupted(run_id) == 1
    assert store.trials(run_id)[0].status == "interrupted"
    store.finish_run(run_id, "done", None, ["a note"], [Pruned({"-fa": "off"}, "t1", "why")])
    run = store.run(run_id[:10])
    assert run is not None and run["notes"] == ["a note"]
    assert run["pruned"] == [{"flags": {"-fa": "off"}, "by_trial": "t1", "reason": "why"}]


def test_reference_answers_roundtrip(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    store.save_reference("fp", "k", {"answers": [1, 2]})
    assert store.reference("fp", "k") == {"answers": [1, 2]}
    assert store.reference("fp", "other") is None


def test_secrets_never_reach_the_database(tmp_path: Path) -> None:
    from bringup.spec import parse_spec

    spec = parse_spec(
        '[engine]\nname = "vllm"\nenv = { HF_TOKEN = "hf_abcdefsecret" }\n[model]\npath = "m"\n'
        '[launch]\nargs = ["--api-key", "sk-live-123456"]\n'
    )
    assert "hf_abcdefsecret" not in spec.public_json()
    assert "sk-live-123456" not in spec.public_json()
    store = Store(tmp_path / "b.db")
    run_id = store.create_run(
        spec_path=None,
        spec_digest="d",
        spec_json=spec.public_json(),
        engine="vllm",
        fingerprint={},
        fingerprint_key="f",
        run_dir="",
    )
    r = TrialResult(
        trial_id="t",
        flags={"--api-key": "sk-flag-999999", "-tp": 2},
        command=["vllm", "serve", "--api-key", "sk-live-123456"],
    )
    r.fail(Stage.READY, Category.RUNTIME_CRASH, ["bad key sk-live-123456 rejected"])
    store.save_trial(
        run_id, 1, r, cfg_key="k", fingerprint_key="f", engine="vllm", engine_version="1"
    )
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("b.db*"))
    for secret in (b"hf_abcdefsecret", b"sk-live-123456", b"sk-flag-999999"):
        assert secret not in raw
    assert r.command[-1] == "sk-live-123456", "the live command keeps what the engine needs"


def test_a_placed_trial_is_saved_in_one_statement_and_keeps_its_node(tmp_path: Path) -> None:
    store = Store(tmp_path / "b.db")
    run_id = _run(store)
    kw = dict(cfg_key="k", engine="llama.cpp", engine_version="1")
    r = TrialResult(trial_id="t1", flags={"-fa": "on"})
    writes: list[str] = []
    store.db.set_trace_callback(writes.append)
    store.save_trial(
        run_id,
        1,
        r,
        fingerprint_key="node-fp",
        node="10.0.0.2/abcd",
        node_fingerprint={"gpus": [{"name": "H200"}]},
        **kw,  # type: ignore[arg-type]
    )
    store.db.set_trace_callback(None)
    assert len(writes) == 1, writes
    # a later save that names no node (a stage change drained before the result) keeps it
    r.fail(Stage.READY, Category.INVALID_CONFIG, ["bad flag"], "drop it")
    store.save_trial(run_id, 1, r, fingerprint_key="fp1", **kw)  # type: ignore[arg-type]
    row = store.trials(run_id)[0]
    assert row.node == "10.0.0.2/abcd"
    assert row.fingerprint_key == "node-fp"
    assert row.category is Category.INVALID_CONFIG
    assert store.decided("k", "node-fp") is not None
    assert store.decided("k", "fp1") is None
