"""Hostile inputs through the real CLI: injection, secrets, orphans, tracebacks.

Each case runs ``bringup`` as a user would (a subprocess, its own terminal output and
exit status), with hostile flag values, environment names and values, server bodies, log
lines, databases and signals; then it checks what the case must never produce. Sweeps use
the simulated engine (``bringup.testing.hostile``), and the real llama-server with Gemma 3
270M where the engine itself matters (signals, its own log, a crash under load); those
cases are skipped, and counted as not run, when the engine is not installed.

A case *held* when the command did what it must (refused with one sentence and exit 2,
or reproduced the value literally) and none of these happened:

- ``injection``: a command ran that the input smuggled in (a ``PWNED`` file appeared), a
  unit gained a directive, a raw escape sequence reached the terminal, a file was written
  through a planted symlink;
- ``secrets_leaked``: a secret value in any file bringup wrote or any line it printed;
- ``orphans``: an engine process (same pid and start time) outlived its bringup;
- ``tracebacks``: a Python traceback on the terminal.

Run under the heavy lock: ``flock /work/wt/heavy.lock python bench/hostile_inputs.py``.
Last line: ``cases=<int> held=<int> injections=<int> secrets_leaked=<int> orphans=<int>
tracebacks=<int>``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bringup.store import Store
from bringup.testing.hostile import sim_spec
from bringup.verdict import Stage, Status, TrialResult

ROOT = Path(__file__).resolve().parents[1]
BRINGUP = [sys.executable, "-c", "from bringup.cli.main import main; main()"]
# the bringup under test: the caller's PYTHONPATH (e.g. an older checkout), else this one
ENV = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH") or str(ROOT / "src"), COLUMNS="200")
NEWLINE = "x\nExecStartPre=/bin/touch PWNED"
SECRET = "sk-hostile-0123456789abcdef"
TOKEN = "hf_hostile_0123456789abcdef"
ESC_SEQ = "\x1b[2J\x1b]0;pwned\x07"


def start_time(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def same_process(pid: int, started: float) -> bool:
    """Still the process that started then (a pid alone may have been reused)."""
    now = start_time(pid)
    return now is not None and abs(now - started) < 0.05


@dataclass
class Outcome:
    held: bool
    injection: bool = False
    secret_leaked: bool = False
    orphan: bool = False
    traceback: bool = False
    note: str = ""


@dataclass
class Run:
    code: int
    out: str
    seconds: float


@dataclass
class Case:
    item: int
    name: str
    fn: Callable[[Path], Outcome]
    needs_engine: bool = False
    results: list[Outcome] = field(default_factory=list)


def bringup(*args: str, cwd: Path, timeout: float = 300, env: dict[str, str] | None = None) -> Run:
    t0 = time.monotonic()
    proc = subprocess.run(
        [*BRINGUP, *args], cwd=cwd, env=ENV | (env or {}), capture_output=True, timeout=timeout
    )
    out = (proc.stdout + proc.stderr).decode(errors="replace")
    return Run(proc.returncode, out, time.monotonic() - t0)


def raw_escape(text: str) -> bool:
    return any(c in text for c in ("\x1b", "\x07", "\x9b"))


def traceback_in(text: str) -> bool:
    return "Traceback (most recent call last)" in text


def leaked(folder: Path, printed: str, secrets: tuple[str, ...]) -> bool:
    """A secret in any line printed or any file under ``folder`` but the inputs."""
    for s in secrets:
        if s in printed:
            return True
        for p in folder.rglob("*"):
            inputs = ("spec.toml", "world.toml")
            if p.is_file() and p.name not in inputs and s.encode() in p.read_bytes():
                return True
    return False


def one_sentence(run: Run, *, code: int = 2) -> bool:
    lines = run.out.strip().splitlines()
    return run.code == code and len(lines) == 1 and lines[0].startswith("bringup: ")


def refused(run: Run, says: str) -> Outcome:
    ok = one_sentence(run) and says in run.out
    return Outcome(ok, traceback=traceback_in(run.out), note=run.out.strip()[:120])


# --- stored runs for deploy and report cases ---------------------------------------------


def stored_run(
    folder: Path,
    *,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    name: str | None = None,
    program: list[str] | None = None,
) -> Path:
    db = folder / "b.db"
    spec = {
        "engine": {"name": "llama.cpp", "env": {}},
        "model": {"path": "/m.gguf", "name": name},
        "launch": {"host": "127.0.0.1", "env": env or {}},
    }
    store = Store(db)
    run_id = store.create_run(
        spec_path="s.toml", spec_digest="d", spec_json=json.dumps(spec), engine="llama.cpp",
        fingerprint={"model": "/m.gguf"}, fingerprint_key="fp", run_dir="r",
    )  # fmt: skip
    command = [*(program or ["/opt/llama-server"]), "--host", "127.0.0.1", "--port", "8123"]
    trial = TrialResult(
        trial_id=f"{run_id}-t001", flags={}, status=Status.PASSED, stage=Stage.PASSED,
        command=command + (argv or []),
    )  # fmt: skip
    store.save_trial(
        run_id, 1, trial, cfg_key="a", fingerprint_key="fp", engine="llama.cpp",
        engine_version="b1",
    )  # fmt: skip
    store.finish_run(run_id, "done", trial.trial_id, [], [])
    store.close()
    return db


def deploy(folder: Path, db: Path, target: str, *extra: str) -> tuple[Run, str]:
    out = folder / "out"
    run = bringup("deploy", "--db", str(db), "--to", target, "--out", str(out), *extra, cwd=folder)
    text = "".join(p.read_text() for p in sorted(out.glob("*"))) if out.exists() else ""
    return run, text


def unit_injected(text: str) -> bool:
    return any(line.startswith("ExecStartPre") for line in text.splitlines())


def systemd_newline(where: str) -> Callable[[Path], Outcome]:
    def case(folder: Path) -> Outcome:
        db = stored_run(
            folder,
            env={"A": NEWLINE} if where == "env" else None,
            argv=["--alias", NEWLINE] if where == "flag" else None,
            name=NEWLINE if where == "name" else None,
        )
        extra = ("--user", NEWLINE) if where == "user" else ()
        run, text = deploy(folder, db, "systemd", *extra)
        injected = unit_injected(text)
        return Outcome(
            run.code == 2 and not injected, injection=injected, traceback=traceback_in(run.out)
        )

    return case


def script_bad_env_name(folder: Path) -> Outcome:
    db = stored_run(folder, env={"A;touch PWNED;B": "1"})
    run, text = deploy(folder, db, "script")
    if text:
        subprocess.run(["bash", str(next((folder / "out").glob("*.sh")))], cwd=folder,
                       capture_output=True, timeout=60)  # fmt: skip
    injected = (folder / "PWNED").exists()
    return Outcome(
        run.code == 2 and not injected, injection=injected, traceback=traceback_in(run.out)
    )


DUMP = (
    "import json, os, sys; "
    'json.dump({"argv": sys.argv[1:], "env": dict(os.environ)}, open(sys.argv[1], "w"))'
)
TRICKY = ["$(touch PWNED)", "`touch PWNED`", "a;touch PWNED", 'it\'s "q" \\ %h $HOME', NEWLINE]


def script_literal(folder: Path) -> Outcome:
    dump = folder / "dump.json"
    env = {f"V{i}": v for i, v in enumerate(TRICKY)}
    db = stored_run(folder, env=env, argv=TRICKY, program=[sys.executable, "-c", DUMP, str(dump)])
    run, _ = deploy(folder, db, "script")
    script = next((folder / "out").glob("*.sh"))
    clean = {k: v for k, v in os.environ.items() if k not in env}
    subprocess.run(["bash", str(script)], cwd=folder, env=clean, capture_output=True, timeout=60)
    got = json.loads(dump.read_text()) if dump.exists() else {"argv": [], "env": {}}
    exact = got["argv"][-len(TRICKY) :] == TRICKY and all(
        got["env"].get(k) == v for k, v in env.items()
    )
    injected = (folder / "PWNED").exists()
    return Outcome(run.code == 0 and exact and not injected, injection=injected,
                   traceback=traceback_in(run.out))  # fmt: skip


def symlink_planted(folder: Path) -> Outcome:
    db = stored_run(folder)
    victim = folder / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    (folder / "out").mkdir()
    (folder / "out" / "bringup-llama-cpp.sh").symlink_to(victim)
    run, _ = deploy(folder, db, "script")
    through = victim.read_text() != "precious\n" or (victim.stat().st_mode & 0o777) != 0o600
    return Outcome(
        run.code == 0 and not through, injection=through, traceback=traceback_in(run.out)
    )


def yaml_literal(target: str) -> Callable[[Path], Outcome]:
    def case(folder: Path) -> Outcome:
        import yaml

        odd = "$(HOME) ${HOME} line\u2028sep"
        db = stored_run(folder, env={"A": odd}, name="m${X}")
        run, _ = deploy(folder, db, target, "--image", "img:1")
        ok = False
        if run.code == 0:
            docs = [
                d
                for f in (folder / "out").glob("*.yaml")
                for d in yaml.safe_load_all(f.read_text())
                if d
            ]
            dumped = json.dumps(docs)
            # both expand in command and env values ($$ keeps a $); Compose also in probes
            probe = "m$${X}" if target == "compose" else "m${X}"
            ok = json.dumps(odd.replace("$", "$$"))[1:-1] in dumped and probe in dumped
        return Outcome(ok, injection=run.code == 0 and not ok, traceback=traceback_in(run.out))

    return case


def systemd_specifiers(folder: Path) -> Outcome:
    engine = folder / "srv"
    engine.write_text("#!/bin/sh\nexit 0\n")
    engine.chmod(0o755)
    db = stored_run(folder, env={"A": "a$b %h"}, argv=["--x", "%h $HOME ;"], program=[str(engine)])
    run, text = deploy(folder, db, "systemd")
    unit = next((folder / "out").glob("*.service"), None)
    verify = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                            text=True, timeout=60) if unit else None  # fmt: skip
    ok = (
        run.code == 0
        and verify is not None
        and verify.returncode == 0
        and 'Environment="A=a$b %%h"' in text
        and '"%%h $$HOME ;"' in text
    )
    return Outcome(ok, injection=unit_injected(text), traceback=traceback_in(run.out))


# --- sweeps on the simulated engine -----------------------------------------------------


def sim_sweep(folder: Path, *extra: str, **spec_kw: Any) -> tuple[Run, Path]:
    spec = sim_spec(folder, **spec_kw)
    db = folder / "b.db"
    run = bringup("sweep", str(spec), "--db", str(db), "--runs-dir", str(folder / "runs"),
                  *extra, cwd=folder)  # fmt: skip
    return run, db


def markup_value(folder: Path) -> Outcome:
    run, _ = sim_sweep(folder, space={"--alias": ["[/]", "[bold red]x"]})
    ok = run.code == 0 and "[/]" in run.out and "launch command:" in run.out
    return Outcome(ok, traceback=traceback_in(run.out))


def escape_value(folder: Path) -> Outcome:
    run, db = sim_sweep(folder, space={"--alias": [ESC_SEQ]})
    rep = bringup("report", "--db", str(db), cwd=folder)
    raw = raw_escape(run.out) or raw_escape(rep.out)
    ok = run.code == 0 and rep.code == 0 and not raw
    return Outcome(ok, injection=raw, traceback=traceback_in(run.out + rep.out))


def secrets_everywhere(folder: Path) -> Outcome:
    run, db = sim_sweep(
        folder,
        space={"--api-key": [SECRET], "--max-batch": [1, 2]},
        launch_args=["--hf-token", TOKEN],
        env={"HF_TOKEN": TOKEN + "-env"},
    )
    printed = run.out
    rep = bringup("report", "--db", str(db), "--json", "r.json", "--csv", "r.csv",
                  "--html", "r.html", cwd=folder)  # fmt: skip
    printed += rep.out
    for target in ("script", "systemd", "k8s", "compose"):
        d = bringup("deploy", "--db", str(db), "--to", target, "--out", target,
                    "--image", "img:1", cwd=folder)  # fmt: skip
        printed += d.out
    leak = leaked(folder, printed, (SECRET, TOKEN))
    ok = run.code == 0 and "launch command:" in run.out and not leak
    return Outcome(ok, secret_leaked=leak, traceback=traceback_in(printed))


def spec_refused(says: str, *extra: str, **spec_kw: Any) -> Callable[[Path], Outcome]:
    def case(folder: Path) -> Outcome:
        run, db = sim_sweep(folder, *extra, **spec_kw)
        launched = False
        if db.exists():
            with sqlite3.connect(db) as conn:
                launched = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] > 0
        # a spec mistake is one "bringup: ..." sentence; click words its option errors itself
        sentence = one_sentence(run) if not extra else run.code == 2
        held = sentence and says in run.out and not launched and not traceback_in(run.out)
        return Outcome(held, traceback=traceback_in(run.out), note=run.out.strip()[-100:])

    return case


def non_utf8(folder: Path) -> Outcome:
    spec = folder / "s.toml"
    spec.write_bytes(b'[engine]\nname = "llama.cpp"\n# caf\xe9\n')
    return refused(bringup("sweep", str(spec), "--db", "b.db", cwd=folder), "not UTF-8")


def not_executable(folder: Path) -> Outcome:
    binary = folder / "llama-server"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o644)
    model = folder / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    spec = folder / "s.toml"
    spec.write_text(
        f'[engine]\nname = "llama.cpp"\nbinary = "{binary}"\n[model]\npath = "{model}"\n'
    )
    return refused(bringup("sweep", str(spec), "--db", "b.db", cwd=folder), "not executable")


def bad_model(kind: str) -> Callable[[Path], Outcome]:
    def case(folder: Path) -> Outcome:
        model = folder / "model.gguf"
        if kind == "text":
            model.write_text("hello, I am a text file\n" * 100)
        else:
            model.mkdir()
        spec = folder / "s.toml"
        spec.write_text(f'[engine]\nname = "llama.cpp"\n[model]\npath = "{model}"\n'
                        '[space]\n"-fa" = ["on", "off"]\n')  # fmt: skip
        run = bringup("sweep", str(spec), "--db", "b.db", cwd=folder)
        return refused(run, "not a GGUF file" if kind == "text" else "is a directory")

    return case


# --- servers and logs ---------------------------------------------------------------------

HOSTILE_SERVER = textwrap.dedent(
    """
    import json
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    BAD = "\\x1b[2J\\x1b]0;pwned\\x07 [/] [bold red]"
    class H(BaseHTTPRequestHandler):
        def _send(self, code, body):
            data = body.encode()
            self.send_response(code); self.send_header("Content-Length", str(len(data)))
            self.end_headers(); self.wfile.write(data)
        def do_GET(self):
            if "models" in self.path:
                self._send(200, json.dumps({"data": [{"id": BAD}]}))
            else:
                self._send(503, BAD)
        def do_POST(self):
            self._send(500, json.dumps({"error": BAD}))
        def log_message(self, *a): pass
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
    """
)


@contextmanager
def hostile_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOSTILE_SERVER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def server_case(*args: str) -> Callable[[Path], Outcome]:
    def case(folder: Path) -> Outcome:
        with hostile_server() as url:
            run = bringup(args[0], url, *args[1:], cwd=folder, timeout=120)
        raw = raw_escape(run.out)
        return Outcome(
            not raw and run.code in (0, 1), injection=raw, traceback=traceback_in(run.out)
        )

    return case


def diagnose_escape(folder: Path) -> Outcome:
    log = folder / "e.log"
    log.write_text(f"start {ESC_SEQ}\ntorch.OutOfMemoryError: CUDA out of memory [/] {ESC_SEQ}\n")
    run = bringup("diagnose", str(log), cwd=folder)
    raw = raw_escape(run.out)
    return Outcome(run.code == 0 and not raw, injection=raw, traceback=traceback_in(run.out))


def diagnose_huge(folder: Path) -> Outcome:
    log = folder / "big.log"
    with log.open("w") as fh:
        fh.write("E llama: CUDA error: out of memory ")
        for _ in range(500):
            fh.write("[garbage=1] " * 8400)  # ~50 MB on one line
        fh.write("\n")
    run = bringup("diagnose", str(log), cwd=folder, timeout=200)
    ok = run.code == 0 and len(run.out) < 10_000 and run.seconds < 30
    return Outcome(
        ok, traceback=traceback_in(run.out), note=f"{run.seconds:.1f} s, {len(run.out)} chars"
    )


def bench_silent(folder: Path) -> Outcome:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except TimeoutError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        run = bringup("bench", f"http://127.0.0.1:{srv.getsockname()[1]}", "--timeout", "10",
                      cwd=folder, timeout=120)  # fmt: skip
    finally:
        stop.set()
        t.join(timeout=5)
        for c in held:
            c.close()
        srv.close()
    ok = run.code == 1 and run.seconds < 20
    return Outcome(ok, traceback=traceback_in(run.out), note=f"{run.seconds:.1f} s")


# --- the store ------------------------------------------------------------------------------


def foreign_db(folder: Path) -> Outcome:
    db = folder / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    before = db.read_bytes()
    spec = sim_spec(folder)
    run = bringup("sweep", str(spec), "--db", str(db), cwd=folder)
    out = refused(run, "not a bringup results database")
    out.held = out.held and db.read_bytes() == before
    return out


def newer_db(command: str) -> Callable[[Path], Outcome]:
    def case(folder: Path) -> Outcome:
        db = folder / "b.db"
        Store(db).close()
        with sqlite3.connect(db) as conn:
            conn.execute("INSERT INTO _migrations VALUES ('m999_future', 0)")
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the bytes compared below
        before = db.read_bytes()
        args = ["sweep", str(sim_spec(folder))] if command == "sweep" else [command]
        run = bringup(*args, "--db", str(db), cwd=folder)
        out = refused(run, "newer bringup")
        out.held = out.held and db.read_bytes() == before
        return out

    return case


def simultaneous_opens(folder: Path) -> Outcome:
    code = (
        "import sys; from bringup.store import Store; s = Store(sys.argv[1]); "
        "s.create_run(spec_path=None, spec_digest='d', spec_json='{}', engine='e', "
        "fingerprint={}, fingerprint_key='f', run_dir='')"
    )
    db = folder / "new.db"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db)], env=ENV,
                              stderr=subprocess.PIPE) for _ in range(10)]  # fmt: skip
    errs = [p.communicate(timeout=120)[1].decode() for p in procs]
    ok = all(p.returncode == 0 for p in procs)
    return Outcome(ok, traceback=any(traceback_in(e) for e in errs) and not ok)


def literal_ids(ref: str, command: str) -> Callable[[Path], Outcome]:
    def case(folder: Path) -> Outcome:
        db = stored_run(folder)
        extra = ("--to", "script") if command == "deploy" else ()
        return refused(bringup(command, ref, "--db", str(db), *extra, cwd=folder), "matches")

    return case


# --- the real llama-server ------------------------------------------------------------------


def llama_spec(folder: Path, *, bench: str = "", extra: str = "", args: str = "") -> Path:
    from bringup.builtin_models import resolve_builtin

    model = resolve_builtin("gemma3-270m")
    spec = folder / "spec.toml"
    spec.write_text(
        f'[engine]\nname = "llama.cpp"\n[model]\npath = "{model}"\n'
        f'[launch]\nargs = ["-c", "1024", "--no-warmup", "-t", "2"{args}]\n'
        "start_timeout_s = 120\nhang_timeout_s = 60\nstop_grace_s = 5\n"
        '[space]\n"--cache-type-v" = ["f16", "q8_0"]\n'
        '[reference]\n"--cache-type-v" = "f16"\n'
        "[bench]\nconcurrency = [1]\ninput_tokens = 16\noutput_tokens = 8\n"
        f"requests = 2\nwarmup = 0\n{bench}"
        f"[checks]\naccuracy = false\n{extra}"
    )
    return spec


def _engine_pid(db: Path, timeout_s: float = 120) -> tuple[int, float] | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as conn:
                row = conn.execute("SELECT pid FROM trials WHERE pid IS NOT NULL").fetchone()
        except sqlite3.Error:
            row = None
        if row and (started := start_time(int(row[0]))) is not None:
            return int(row[0]), started
        time.sleep(0.1)
    return None


def _survives(pid: int, started: float, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not same_process(pid, started):
            return False
        time.sleep(0.1)
    if same_process(pid, started):
        os.killpg(pid, signal.SIGKILL)  # the engine this case's bringup started
        return True
    return False


def bringup_signalled(sig: signal.Signals) -> Callable[[Path], Outcome]:
    def case(folder: Path) -> Outcome:
        db = folder / "b.db"
        proc = subprocess.Popen(
            [*BRINGUP, "sweep", str(llama_spec(folder)), "--db", str(db)],
            cwd=folder, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        engine = _engine_pid(db)
        if engine is None:
            proc.kill()
            return Outcome(False, note="no engine launched")
        time.sleep(0.5)
        proc.send_signal(sig)
        out = proc.communicate(timeout=120)[0].decode(errors="replace")
        orphan = _survives(*engine, wait_s=10.0)
        if sig is signal.SIGKILL:  # the next run reconciles the dead one
            again = bringup("sweep", str(llama_spec(folder)), "--db", str(db), "--max-trials", "1",
                            cwd=folder)  # fmt: skip
            out += again.out
        with sqlite3.connect(db) as conn:
            first = conn.execute("SELECT status FROM runs ORDER BY created LIMIT 1").fetchone()[0]
        code_ok = proc.returncode == (-9 if sig is signal.SIGKILL else 130)
        ok = code_ok and not orphan and first == "interrupted"
        return Outcome(ok, orphan=orphan, traceback=traceback_in(out), note=f"first run {first}")

    return case


def _benchmarking_pid(db: Path, timeout_s: float) -> int | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as conn:
                row = conn.execute("SELECT pid FROM trials WHERE stage='benchmarked'").fetchone()
        except sqlite3.Error:
            row = None
        if row and row[0]:
            return int(row[0])
        time.sleep(0.1)
    return None


def engine_killed_under_load(folder: Path) -> Outcome:
    db = folder / "b.db"
    spec = llama_spec(folder, bench="duration_s = 8\n")
    proc = subprocess.Popen(
        [*BRINGUP, "sweep", str(spec), "--db", str(db), "--max-trials", "1"],
        cwd=folder, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    pid = _benchmarking_pid(db, 180)
    if pid is None:
        proc.kill()
        return Outcome(False, note="never benchmarked")
    time.sleep(1.5)
    os.kill(pid, signal.SIGKILL)  # the engine this case's bringup started, by its pid
    out = proc.communicate(timeout=180)[0].decode(errors="replace")
    with sqlite3.connect(db) as conn:
        cat, ev = conn.execute("SELECT category, evidence_json FROM trials").fetchone()
    ok = cat != "errors_under_load" and "SIGKILL" in ev
    return Outcome(ok, traceback=traceback_in(out), note=f"{cat}: {json.loads(ev)[0][:80]}")


def llama_api_key(folder: Path) -> Outcome:
    spec = llama_spec(folder, args=f', "--api-key", "{SECRET}"')
    key = {"SERVER_KEY": SECRET}
    run = bringup("sweep", str(spec), "--db", "b.db", "--api-key-env", "SERVER_KEY",
                  cwd=folder, env=key)  # fmt: skip
    rep = bringup("report", "--db", "b.db", "--json", "r.json", "--html", "r.html", cwd=folder)
    dep = bringup("deploy", "--db", "b.db", "--to", "systemd", "--out", "d", cwd=folder)
    printed = run.out + rep.out + dep.out
    leak = leaked(folder, printed, (SECRET,))
    ok = run.code == 0 and "launch command:" in run.out and not leak
    return Outcome(ok, secret_leaked=leak, traceback=traceback_in(printed), note=f"exit {run.code}")


CASES = [
    *(
        Case(1, f"systemd refuses a newline in the {w}", systemd_newline(w))
        for w in ("env", "flag", "name", "user")
    ),
    Case(1, "script refuses an env name with ;", script_bad_env_name),
    Case(1, "script reproduces $(), ``, ;, quotes, newline literally", script_literal),
    Case(1, "deploy replaces a planted symlink", symlink_planted),
    Case(1, "k8s keeps $(VAR) literal", yaml_literal("k8s")),
    Case(1, "compose keeps ${VAR} literal", yaml_literal("compose")),
    Case(1, "systemd keeps %h and $ literal, verify passes", systemd_specifiers),
    Case(2, "SIGHUP stops the engine, run interrupted", bringup_signalled(signal.SIGHUP), True),
    Case(2, "SIGTERM stops the engine, run interrupted", bringup_signalled(signal.SIGTERM), True),
    Case(
        2,
        "SIGKILL: engine dies with bringup, next run reconciles",
        bringup_signalled(signal.SIGKILL),
        True,
    ),
    Case(3, "[/] in a flag value prints", markup_value),
    Case(3, "ESC in a flag value: sweep and report", escape_value),
    Case(3, "probe of a hostile server", server_case("probe", "--timeout", "5")),
    Case(3, "watch of a hostile server", server_case("watch", "--interval", "0.1", "--count", "1")),
    Case(
        3,
        "bench of a hostile server",
        server_case("bench", "--requests", "2", "--warmup", "0", "--timeout", "5"),
    ),
    Case(3, "diagnose of a hostile log", diagnose_escape),
    Case(4, "secrets in space, args, env: every artifact and line", secrets_everywhere),
    Case(4, "llama-server --api-key: logs, store, reports, deploy", llama_api_key, True),
    Case(5, "llama-server SIGKILLed under load names the signal", engine_killed_under_load, True),
    Case(6, "non-executable engine binary", not_executable),
    Case(
        6,
        "flag value over 128 KiB",
        spec_refused("128 KiB", space={"--chat-template": ["x" * 200_000]}),
    ),
    Case(6, "bench.duration_s = -5", spec_refused("bench.duration_s", bench={"duration_s": -5})),
    Case(
        6, "bench.concurrency = [0]", spec_refused("bench.concurrency", bench={"concurrency": [0]})
    ),
    Case(
        6,
        "bench.request_rate = [-1]",
        spec_refused("bench.request_rate", bench={"request_rate": [-1.0]}),
    ),
    Case(
        6,
        "unknown objective.maximize",
        spec_refused("is not a metric", extra='[objective]\nmaximize = "tps"'),
    ),
    Case(6, "--max-trials 0", spec_refused("--max-trials", "--max-trials", "0")),
    Case(6, "--max-trials -1", spec_refused("--max-trials", "--max-trials", "-1")),
    Case(6, "non-UTF-8 spec", non_utf8),
    Case(7, "another program's SQLite file", foreign_db),
    Case(7, "sweep on a newer schema", newer_db("sweep")),
    Case(7, "report on a newer schema", newer_db("report")),
    Case(7, "ten simultaneous first opens", simultaneous_opens),
    Case(8, "a text file as the model", bad_model("text")),
    Case(8, "a folder as the model", bad_model("folder")),
    Case(8, "report %", literal_ids("%", "report")),
    Case(8, "report _", literal_ids("_", "report")),
    Case(8, "deploy %", literal_ids("%", "deploy")),
    Case(8, "diagnose of a 50 MB single-line log", diagnose_huge),
    Case(8, "bench --timeout 10 against a never-answering server", bench_silent),
]


def engine_installed() -> bool:
    try:
        from bringup.builtin_models import resolve_builtin
        from bringup.engines.llamacpp import find_llama_server

        resolve_builtin("gemma3-270m")
        return find_llama_server() is not None
    except Exception:
        return False


def main() -> None:
    have_engine = engine_installed()
    totals = {
        "cases": 0,
        "held": 0,
        "injections": 0,
        "secrets_leaked": 0,
        "orphans": 0,
        "tracebacks": 0,
    }
    for case in CASES:
        if case.needs_engine and not have_engine:
            print(f"[{case.item}] SKIP {case.name}: llama-server or the model is not installed")
            continue
        with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
            t0 = time.monotonic()
            try:
                out = case.fn(Path(tmp))
            except Exception as exc:  # the harness failed: count the case as not held
                out = Outcome(False, note=f"harness error: {type(exc).__name__}: {exc}")
            took = time.monotonic() - t0
        totals["cases"] += 1
        totals["held"] += out.held
        totals["injections"] += out.injection
        totals["secrets_leaked"] += out.secret_leaked
        totals["orphans"] += out.orphan
        totals["tracebacks"] += out.traceback
        verdict = "held" if out.held else "FAILED"
        note = f" ({out.note})" if out.note else ""
        print(f"[{case.item}] {verdict:6} {case.name} [{took:.1f} s]{note}", flush=True)
    print(" ".join(f"{k}={v}" for k, v in totals.items()))


if __name__ == "__main__":
    main()
