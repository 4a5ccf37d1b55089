"""``bringup matrix --export`` / ``sweep --import``: decided verdicts travel between stores
with their fingerprints, and a sweep reuses one only where its own fingerprint matches.

The sweeps are real (the simulated engine behind the ``command`` engine, a few trials of
about a second); "another machine" is the same file with a different CPU in each verdict's
fingerprint and the key that fingerprint gives, as that machine's export would carry.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.fingerprint import fingerprint_key
from bringup.store import Store
from bringup.store.exchange import import_verdicts
from bringup.testing.hostile import sim_spec

OOM = (
    "\n[[outcome]]\n"
    'when = { "--max-batch" = 3 }\n'
    'kind = "crash"\n'
    'category = "oom_gpu"\n'
    "after_s = 10.0\n"
    'log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"\n'
)


def _spec(tmp_path: Path) -> Path:
    # one measurement each: the exchange is about first looks, not repeats of the leader
    spec = sim_spec(tmp_path, space={"--max-batch": [1, 2, 3]}, extra="[plan]\nmax_samples = 1\n")
    world = tmp_path / "world.toml"
    world.write_text(world.read_text(encoding="utf-8") + OOM, encoding="utf-8")
    return spec


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args), env={"COLUMNS": "500"})  # no wrapped lines
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res.exit_code, res.output


def _latest_rows(db: Path) -> list[sqlite3.Row]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        run = conn.execute(
            "SELECT id FROM runs WHERE status != 'imported' ORDER BY created DESC LIMIT 1"
        ).fetchone()[0]
        return conn.execute("SELECT * FROM trials WHERE run_id=? ORDER BY seq", (run,)).fetchall()


def test_exported_verdicts_are_reused_only_on_the_same_fingerprint(tmp_path: Path) -> None:
    spec = str(_spec(tmp_path))
    first, file = tmp_path / "first.db", tmp_path / "verdicts.json"
    code, out = _run("sweep", spec, "--db", str(first), "--runs-dir", str(tmp_path / "runs"))
    assert code == 0, out
    code, out = _run("matrix", "--db", str(first), "--export", str(file))
    assert code == 0 and "exported 3 decided verdicts" in out, out

    doc = json.loads(file.read_text(encoding="utf-8"))
    oom = next(v for v in doc["verdicts"] if v["flags"] == {"--max-batch": 3})
    # the failure signature travels whole
    assert oom["status"] == "failed" and oom["category"] == "oom_gpu", oom
    assert oom["rule"] and oom["remedy"] and any("out of memory" in e for e in oom["evidence"])
    assert oom["engine_version"] and oom["fingerprint"]["cpu"] and "gpu_architecture" in oom
    assert oom["fingerprint_key"] == fingerprint_key(oom["fingerprint"])

    # the same machine, another store: every verdict stands, nothing is launched, and each
    # reused row cites where it was seen
    same = tmp_path / "same.db"
    code, out = _run("sweep", spec, "--db", str(same), "--import", str(file))
    assert code == 0 and "imported 3 verdicts" in out, out
    rows = _latest_rows(same)
    assert len(rows) == 3 and all(r["reused_from"] for r in rows), [dict(r) for r in rows]
    assert all(r["pid"] is None for r in rows)  # no engine started
    assert all("imported from verdicts.json: seen on" in (r["note"] or "") for r in rows)
    failed = next(r for r in rows if json.loads(r["flags_json"]) == {"--max-batch": 3})
    assert failed["category"] == "oom_gpu"
    # importing again adds nothing
    code, out = _run("sweep", spec, "--db", str(same), "--import", str(file))
    assert code == 0 and "imported 0 verdicts" in out and "(3 known here)" in out, out

    # another machine's verdicts (another CPU): imported, shown, never reused here
    other = dict(doc)
    other["verdicts"] = []
    for v in doc["verdicts"]:
        fp = {**v["fingerprint"], "cpu": "Zen 9000"}
        other["verdicts"].append(
            {
                **v,
                "trial_id": v["trial_id"] + "-x",
                "fingerprint": fp,
                "fingerprint_key": fingerprint_key(fp),
            }
        )
    other_file = tmp_path / "other.json"
    other_file.write_text(json.dumps(other), encoding="utf-8")
    fresh = tmp_path / "fresh.db"
    code, out = _run("sweep", spec, "--db", str(fresh), "--import", str(other_file))
    assert code == 0, out
    rows = _latest_rows(fresh)
    assert len(rows) == 3 and not any(r["reused_from"] for r in rows)
    assert all(r["pid"] for r in rows)  # each one launched here
    # verdicts imported after a sweep do not hide it from `report` (the latest sweep)
    latest = Store(first).run()
    assert import_verdicts(Store(first), other_file).added == 3
    assert Store(first).run() == latest
    code, out = _run("matrix", "--db", str(fresh))
    header = out.splitlines()[0]
    assert "CPU Zen 9000" in header and header.count(" / command ") == 2, out


def test_an_edited_or_foreign_file_is_refused_whole_and_loses_nothing(tmp_path: Path) -> None:
    spec = str(_spec(tmp_path))
    db, file = tmp_path / "b.db", tmp_path / "verdicts.json"
    assert _run("sweep", spec, "--db", str(db), "--runs-dir", str(tmp_path / "runs"))[0] == 0
    assert _run("matrix", "--db", str(db), "--export", str(file))[0] == 0
    before = len(Store(db).trials())

    doc = json.loads(file.read_text(encoding="utf-8"))
    doc["verdicts"][-1]["fingerprint"]["cpu"] = "Edited CPU"  # the key no longer matches
    for v in doc["verdicts"]:
        v["trial_id"] += "-e"  # not known here: only the check can refuse them
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc), encoding="utf-8")
    code, out = _run("sweep", spec, "--db", str(db), "--import", str(edited))
    assert code == 2 and "fingerprint_key does not match its fingerprint" in out, out
    assert out.strip().count("\n") <= 2  # the header, then one sentence
    assert len(Store(db).trials()) == before  # no verdict of the file was added

    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"rows": []}', encoding="utf-8")
    code, out = _run("sweep", spec, "--db", str(db), "--import", str(foreign))
    assert code == 2 and "not a bringup verdicts file" in out, out
    code, out = _run("sweep", spec, "--db", str(db), "--import", str(tmp_path / "none.json"))
    assert code == 2 and "cannot read" in out, out
    assert len(Store(db).trials()) == before
