"""How much the load generator itself costs: bringup's client against its peers.

Starts the fake OpenAI-compatible server (``bringup.testing.fakeserver``) in its own
process, emitting ``--rate`` events/s on each stream with a send stamp on every event, then
drives ``--streams`` concurrent streams with each client in turn: bringup's own, guidellm,
aiperf and ``vllm bench serve`` (each installed at a pinned version into its own virtualenv
under ``~/.cache/bringup/peers``; a peer that cannot be installed or run is reported as
skipped, with the reason).

For every client, in a steady window in the middle of its run:
- events/s: events the server sent in the window / window length;
- CPU µs/event: user+sys of the client's whole process tree in the window / those events;
- lag p50/p99: receipt minus the server's send stamp, for clients that expose receipt
  times per event (bringup); peers export no per-event receipt times, so theirs is "n/a".

Last line: ``lag_p99_ms=<float> cpu_us_per_event=<float> best_peer_cpu_us_per_event=<float>``.

    .venv/bin/python bench/client_overhead.py [--streams 256] [--rate 50] [--seconds 40]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bringup.testing.fakeserver import FakeServerConfig, FakeServerProcess

PEERS = {"guidellm": "guidellm==0.8.1", "aiperf": "aiperf==0.13.0", "vllm": "vllm==0.33.0"}
CACHE = Path(os.environ.get("BRINGUP_PEER_CACHE", Path.home() / ".cache/bringup/peers"))
INPUT_TOKENS = 32


@dataclass
class Figures:
    tool: str
    events_s: float = math.nan
    lag_p50_ms: float = math.nan
    lag_p99_ms: float = math.nan
    cpu_us_per_event: float = math.nan
    cpu_cores: float = math.nan
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- process tree CPU


def tree_cpu_s(pid: int) -> float:
    """user+sys seconds of ``pid`` and its live descendants (and their reaped children)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return math.nan
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def measure_window(
    proc: subprocess.Popen[bytes],
    fake: FakeServerProcess,
    streams: int,
    ramp_s: float,
    window_s: float,
) -> tuple[float, float, float, dict[str, Any], tuple[float, float]]:
    """Wait for steady load; (events/s, CPU s, events, server stats, bounds) of the window.

    Start-up (imports, tokenizers, data generation) is not counted: the ramp starts when the
    first stream opens (within 120 s). The window opens once ``ramp_s`` more have passed
    and 95% of the streams are open, or at ``ramp_s`` + 10 s with however many are open
    then: a client too slow to open them all is still measured, with a warning.
    """
    deadline = time.monotonic() + 120
    while fake.stats()["active"] == 0:
        if proc.poll() is not None:
            raise RuntimeError(f"client exited early with code {proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError("no stream opened within 120 s")
        time.sleep(0.1)
    start = time.monotonic()
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"client exited early with code {proc.returncode}")
        last = fake.stats()["active"]
        waited = time.monotonic() - start
        if (last >= 0.95 * streams and waited >= ramp_s) or waited >= ramp_s + 10:
            break
        time.sleep(0.25)
    fake.reset_stats()
    cpu0, t0 = tree_cpu_s(proc.pid), time.monotonic()
    time.sleep(window_s)
    st = fake.stats()
    cpu1, t1 = tree_cpu_s(proc.pid), time.monotonic()
    if proc.poll() is not None or math.isnan(cpu1):
        raise RuntimeError("client exited during the measured window")
    if min(last, st["active"]) < 0.9 * streams:
        st["warning"] = (
            f"only {last} streams active at the window's start, {st['active']} at its end"
        )
    return st["events"] / (t1 - t0), cpu1 - cpu0, st["events"], st, (t0, t1)


def stop_tree(proc: subprocess.Popen[bytes], wait_s: float) -> None:
    """Let the client finish for ``wait_s``, then end its process group (we started it)."""
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def drive(
    tool: str,
    argv: list[str],
    fake: FakeServerProcess,
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    window_file: Path | None = None,
) -> Figures:
    CACHE.mkdir(parents=True, exist_ok=True)
    log = CACHE / f"{tool}.run.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=cwd
        )
        try:
            ev_s, cpu_s, events, st, bounds = measure_window(
                proc, fake, args.streams, args.ramp, args.window
            )
        except RuntimeError as exc:
            stop_tree(proc, 0)
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            return Figures(tool, note=f"skipped: {exc}; {' | '.join(tail)[:300]}")
        if window_file is not None:
            window_file.write_text(f"{bounds[0]!r} {bounds[1]!r}")
        stop_tree(proc, args.seconds + 60)
    fig = Figures(
        tool, events_s=ev_s, cpu_us_per_event=cpu_s / events * 1e6 if events else math.nan
    )
    fig.cpu_cores = cpu_s / args.window
    fig.extra["server_send_lateness_p99_ms"] = st["send_lateness_p99_ms"]
    if "warning" in st:
        fig.note = st["warning"]
    return fig


# ---------------------------------------------------------------- bringup's own client


async def _child_run(url: str, args: argparse.Namespace) -> list[tuple[float, float]]:
    """One closed-loop window of ``streams`` for ``seconds``: (receipt time, lag) per event."""
    from bringup.bench import BenchConfig
    from bringup.bench.client import make_session, request_body
    from bringup.bench.prompts import prepare
    from bringup.bench.records import now
    from bringup.bench.workers import ClientProcesses, Window, drive

    cfg = BenchConfig(
        concurrency=[args.streams], input_tokens=INPUT_TOKENS, output_tokens=args.tokens,
        requests=1, warmup=0, duration_s=args.seconds, processes=args.processes,
    )  # fmt: skip
    async with make_session(cfg, 8) as session:
        prepared = await prepare(session, url, cfg, 1024)
    bodies = [request_body(cfg, p, length_options=True) for p in prepared.prompts]
    win = Window(url, cfg, bodies, "concurrency", float(args.streams), now(), None)
    if args.processes > 1:
        procs = await ClientProcesses(args.processes).start()
        try:
            run = await procs.run(win)
        finally:
            await procs.close()
    else:
        run = await drive(win)
    # every fake-server event carries text and a stamp, so the lists line up
    return [
        (t, lag)
        for r in run.records
        if len(r.client_lag) == len(r.event_times)
        for t, lag in zip(r.event_times, r.client_lag, strict=True)
    ]


def child_bringup(url: str, args: argparse.Namespace, out: Path, window_file: Path) -> None:
    """Runs in the client process; keeps the lags of events received in the parent's window."""
    from bringup.bench.metrics import Distribution
    from bringup.bench.workers import run_on_fast_loop

    pairs = run_on_fast_loop(_child_run(url, args))
    deadline = time.monotonic() + 60
    while not window_file.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.2)
    t0, t1 = (float(x) for x in window_file.read_text().split())
    lag = Distribution.of((lag for t, lag in pairs if t0 <= t <= t1), 1000.0)
    data = {
        "lag_p50_ms": lag.p50 if lag else None,
        "lag_p99_ms": lag.p99 if lag else None,
        "lag_max_ms": lag.max if lag else None,
        "events_in_window": lag.n if lag else 0,
        "events_total": len(pairs),
    }
    out.write_text(json.dumps(data))


def run_bringup(fake: FakeServerProcess, args: argparse.Namespace) -> Figures:
    with tempfile.TemporaryDirectory() as tmp:
        out, window = Path(tmp) / "out.json", Path(tmp) / "window"
        window.write_text("")
        argv = [sys.executable, __file__, "--child-bringup", fake.url, "--child-out", str(out)]
        argv += ["--child-window", str(window), *_shared(args)]
        fig = drive("bringup", argv, fake, args, window_file=window)
        data = json.loads(out.read_text()) if out.exists() else {}
    fig.lag_p50_ms = data.get("lag_p50_ms") or math.nan
    fig.lag_p99_ms = data.get("lag_p99_ms") or math.nan
    fig.extra.update({k: data.get(k) for k in ("lag_max_ms", "events_in_window", "events_total")})
    return fig


def _shared(args: argparse.Namespace) -> list[str]:
    return [
        "--streams", str(args.streams), "--rate", str(args.rate), "--seconds", str(args.seconds),
        "--tokens", str(args.tokens), "--processes", str(args.processes),
    ]  # fmt: skip


# ---------------------------------------------------------------- peers


def install(tool: str, given: dict[str, Path]) -> Path:
    """A virtualenv holding the pinned peer; raises RuntimeError when it cannot be installed."""
    if tool in given:
        return given[tool]
    pin = PEERS[tool]
    venv = CACHE / pin.replace("==", "-")
    marker = venv / ".installed"
    if marker.exists():
        return venv
    CACHE.mkdir(parents=True, exist_ok=True)
    if not (venv / "bin/python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    res = subprocess.run(
        [str(venv / "bin/pip"), "install", "-q", pin], capture_output=True, text=True, timeout=3600
    )
    if res.returncode != 0:
        raise RuntimeError(f"pip install {pin} failed: {res.stderr.strip().splitlines()[-1:]}")
    marker.touch()
    return venv


TOKENIZER_SCRIPT = """
import json, sys
from pathlib import Path
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
words = sys.argv[2].split()
vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(dict.fromkeys(words))}}
tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##")
tok.save(str(out / "tokenizer.json"))
config = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"}
(out / "tokenizer_config.json").write_text(json.dumps(config | {"model_max_length": 1 << 20}))
(out / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
"""


def local_tokenizer(venv: Path) -> Path:
    """A one-word-one-token tokenizer on disk, so peers need no model hub."""
    from bringup.bench.prompts import _WORDS as PROMPT_WORDS
    from bringup.testing.fakeserver.server import _WORDS as SERVER_WORDS

    out = CACHE / "word-tokenizer"
    words = " ".join([*PROMPT_WORDS, *SERVER_WORDS, *(str(i) for i in range(100))])
    subprocess.run([str(venv / "bin/python"), "-c", TOKENIZER_SCRIPT, str(out), words], check=True)
    return out


def peer_argv(
    tool: str, venv: Path, url: str, tok: Path, args: argparse.Namespace, outdir: Path
) -> list[str]:
    bin_ = venv / "bin"
    if tool == "guidellm":
        return [
            str(bin_ / "guidellm"), "run",
            "--backend", f"kind=openai_http,target={url},model=fake-model,"
            "request_format=/v1/completions",
            "--profile", f"kind=concurrent,streams={args.streams}",
            "--constraint", f"kind=max_duration,seconds={args.seconds:g}",
            "--tokenizer", f"kind=huggingface_auto,model={tok}",
            "--data", f"kind=synthetic_text,prompt_tokens={INPUT_TOKENS},"
            f"output_tokens={args.tokens}",
            "--disable-console-interactive",
        ]  # fmt: skip
    if tool == "aiperf":
        return [
            str(bin_ / "aiperf"), "profile", "--url", url, "--model", "fake-model",
            "--endpoint-type", "completions", "--streaming", "--concurrency", str(args.streams),
            "--benchmark-duration", str(args.seconds), "--tokenizer", str(tok),
            "--synthetic-input-tokens-mean", str(INPUT_TOKENS), "--output-tokens-mean",
            str(args.tokens), "--extra-inputs", "ignore_eos:true", "--artifact-dir", str(outdir),
            "--ui-type", "none",
        ]  # fmt: skip
    per_stream = args.seconds * args.rate / args.tokens  # requests one stream gets through
    return [
        str(bin_ / "vllm"), "bench", "serve", "--backend", "openai", "--base-url", url,
        "--endpoint", "/v1/completions", "--model", "fake-model", "--tokenizer", str(tok),
        "--dataset-name", "random", "--random-input-len", str(INPUT_TOKENS),
        "--random-output-len", str(args.tokens),
        "--num-prompts", str(args.streams * (2 + math.ceil(per_stream))),
        "--max-concurrency", str(args.streams), "--ignore-eos", "--disable-tqdm",
    ]  # fmt: skip


def run_peer(tool: str, fake: FakeServerProcess, args: argparse.Namespace) -> Figures:
    try:
        venv = install(tool, dict(_peer_venvs(args.peer_venv)))
        tok = local_tokenizer(venv)
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        return Figures(tool, note=f"skipped: {exc}"[:300])
    outdir = Path(tempfile.mkdtemp(prefix=f"{tool}-"))
    env = dict(os.environ)
    if tool != "aiperf":  # aiperf's offline mode reads only hub snapshots, not a local dir
        env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    argv = peer_argv(tool, venv, fake.url, tok, args, outdir)
    return drive(tool, argv, fake, args, env, outdir)


def _peer_venvs(items: list[str]) -> list[tuple[str, Path]]:
    return [(k, Path(v)) for k, _, v in (i.partition("=") for i in items)]


# ---------------------------------------------------------------- main


def _f(x: float, digits: int = 2) -> str:
    return "n/a" if math.isnan(x) else f"{x:.{digits}f}"


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--streams", type=int, default=256)
    p.add_argument("--rate", type=float, default=50.0, help="events/s per stream")
    p.add_argument("--seconds", type=float, default=40.0, help="length of each client's run")
    p.add_argument("--ramp", type=float, default=8.0, help="seconds before the window opens")
    p.add_argument("--window", type=float, default=15.0, help="measured window, s")
    p.add_argument("--tokens", type=int, default=250, help="output tokens per request")
    p.add_argument("--processes", type=int, default=1, help="bringup client processes")
    p.add_argument("--peers", default="guidellm,aiperf,vllm", help="comma list, or 'none'")
    p.add_argument(
        "--peer-venv", action="append", default=[], metavar="TOOL=PATH",
        help="use an existing virtualenv for a peer instead of installing it",
    )  # fmt: skip
    p.add_argument("--child-bringup", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    p.add_argument("--child-window", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child_bringup:
        child_bringup(args.child_bringup, args, Path(args.child_out), Path(args.child_window))
        return
    if args.ramp + args.window + 5 > args.seconds:
        p.error("--seconds must exceed --ramp + --window + 5")
    server = FakeServerConfig(event_rate=args.rate, tokens_per_event=1, model="fake-model")
    results: list[Figures] = []
    with FakeServerProcess(server) as fake:
        results.append(run_bringup(fake, args))
        for tool in [t for t in args.peers.split(",") if t and t != "none"]:
            results.append(run_peer(tool, fake, args))
    print(
        f"load: {args.streams} streams x {args.rate:g} events/s"
        f" = {args.streams * args.rate:.0f} events/s offered"
    )
    print(
        f"{'client':<10} {'events/s':>9} {'lag p50':>8} {'lag p99':>8}"
        f" {'cpu us/ev':>10} {'cores':>6}  note"
    )
    for r in results:
        print(
            f"{r.tool:<10} {_f(r.events_s, 0):>9} {_f(r.lag_p50_ms):>8} {_f(r.lag_p99_ms):>8} "
            f"{_f(r.cpu_us_per_event, 1):>10} {_f(r.cpu_cores):>6}  {r.note} {json.dumps(r.extra)}"
        )
    ours = results[0]
    peers = [r.cpu_us_per_event for r in results[1:] if not math.isnan(r.cpu_us_per_event)]
    best = min(peers) if peers else math.nan
    print(
        f"lag_p99_ms={ours.lag_p99_ms:.3f} cpu_us_per_event={ours.cpu_us_per_event:.2f}"
        f" best_peer_cpu_us_per_event={best:.2f}"
    )


if __name__ == "__main__":
    main()
