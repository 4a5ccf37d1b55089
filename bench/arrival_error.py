"""How far bringup's TTFT and ITL are from the server's truth, quiet and on a busy machine.

Starts the paced fake server (``bringup.testing.fakeserver``: first token ``--ttft`` after
the request, then one every ``1/--rate`` s, each event stamped with when it left, the first
also with when the request came in) in its own process at a higher priority (niceness -10;
where that is not permitted, the client runs at +10 instead), then drives ``--streams``
closed-loop streams of ``--tokens`` tokens with bringup's client, in a steady window:

- quiet, and beside two CPU hogs (``bringup.testing.hogs``) at the client's priority;
- each both with the kernel's receive stamps (the default) and with the client's own clock
  (the fallback path, ``--no-client-clock`` skips it), which is how every peer times events.

Truth per request: TTFT = first event's send stamp - the request's arrival stamp (the
server reads requests with the kernel's receive stamps too, so a burst of writes on its
loop does not delay it); ITL = gap between consecutive send stamps. Error = reported -
truth, as the difference of the p99s (the ``*_p99_error`` figures) and as the p99 of
per-request / per-token errors.
A first token read together with later bytes carries the newest segment's kernel stamp
(Linux merges queued segments and keeps the last stamp), so its TTFT is an upper bound; the
share of such requests, and the TTFT error over the others (exact stamps), are printed on
their own lines before the last. The last line's figures are over every request.
Then, as in ``client_overhead.py``, each peer (guidellm, aiperf, ``vllm bench serve``) drives
the same server quietly, and every client's CPU µs per event is measured the same way.

Last line: ``ttft_p99_error_ms=<f> ttft_p99_error_hogs_ms=<f> itl_p99_error_hogs_ms=<f>
coalesced_share=<f> cpu_us_per_event=<f> best_peer_cpu_us_per_event=<f>`` (kernel stamps;
coalesced share beside the hogs; CPU quiet).

    .venv/bin/python bench/arrival_error.py [--streams 256] [--peers guidellm,aiperf,vllm]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bringup.testing.fakeserver import FakeServerConfig, FakeServerProcess
from bringup.testing.hogs import cpu_hogs
from client_overhead import Figures, drive, run_peer

INPUT_TOKENS = 32
SERVER_NICE, CLIENT_NICE = -10, 10


@dataclass
class Run:
    name: str
    hogs: int
    kernel: bool
    fig: Figures | None = None
    data: dict[str, Any] | None = None


# ---------------------------------------------------------------- the client process


async def _child_records(url: str, args: argparse.Namespace) -> list[Any]:
    from bringup.bench import BenchConfig
    from bringup.bench.client import make_session, request_body, stream_pool
    from bringup.bench.load import closed_loop
    from bringup.bench.prompts import prepare

    cfg = BenchConfig(
        concurrency=[args.streams], input_tokens=INPUT_TOKENS, output_tokens=args.tokens,
        requests=1, warmup=0, duration_s=args.seconds,
    )  # fmt: skip
    async with make_session(cfg, 8) as session:
        prepared = await prepare(session, url, cfg, 1024)
    bodies = [request_body(cfg, p, length_options=True) for p in prepared.prompts]
    gc.disable()  # as bench.workers.drive does for a measured window
    async with stream_pool(url, cfg, kernel_stamps=args.child_kernel) as pool:
        run = await closed_loop(
            pool, bodies, concurrency=args.streams, requests=None, duration_s=args.seconds
        )
        clock = pool.arrival_clock
    gc.enable()
    return [clock, run.records]


def _pct(values: list[float], q: float) -> float:
    from bringup.bench.metrics import percentile

    return percentile(sorted(values), q) * 1000 if values else math.nan


def errors_of(records: list[Any], t0: float, t1: float) -> dict[str, Any]:
    """Reported against true TTFT and ITL over good requests that left within [t0, t1]."""
    ttft, ttft_true, ttft_err, ttft_intent, delay = [], [], [], [], []
    upstream, downstream = [], []  # request left -> server got it; token left -> arrived
    itl, itl_true, itl_err = [], [], []
    exact, exact_true = [], []  # TTFTs whose first token was read alone: exact stamps
    events = coalesced = first_coalesced = 0
    for r in records:
        if not r.ok or not t0 <= r.left <= t1 or r.server_received is None:
            continue
        n = len(r.event_times)
        if len(r.client_lag) != n or any(k != 1 for k in r.event_tokens):
            continue
        sends = [t - lag for t, lag in zip(r.event_times, r.client_lag, strict=True)]
        truth = sends[0] - r.server_received
        ttft.append(r.ttft)
        ttft_true.append(truth)
        ttft_err.append(r.ttft - truth)
        ttft_intent.append(r.event_times[0] - r.sent)
        delay.append(r.client_delay)
        upstream.append(r.server_received - r.left)
        downstream.append(r.client_lag[0])
        events += n
        coalesced += r.coalesced()
        # the kernel merges segments queued in a socket into one stamped with the newest, so
        # a first token read late together with later bytes arrives, as far as anyone can
        # tell, with them: its TTFT is an upper bound (RequestRecord.ttft_upper_bound)
        first_coalesced += r.ttft_upper_bound
        if not r.ttft_upper_bound:
            exact.append(r.ttft)
            exact_true.append(truth)
        reported = r.itls()  # one per token after the first read's events
        first = n - len(reported)
        true = [sends[m] - sends[m - 1] for m in range(first, n)]
        itl += reported
        itl_true += true
        itl_err += [a - b for a, b in zip(reported, true, strict=True)]
    return {
        "requests": len(ttft),
        "ttft_p50_ms": _pct(ttft, 50), "ttft_p99_ms": _pct(ttft, 99),
        "true_ttft_p50_ms": _pct(ttft_true, 50), "true_ttft_p99_ms": _pct(ttft_true, 99),
        "ttft_err_p99_ms": _pct(ttft_err, 99), "ttft_err_max_ms": _pct(ttft_err, 100),
        "ttft_from_intent_p99_ms": _pct(ttft_intent, 99),
        "exact_requests": len(exact),
        "ttft_exact_p99_ms": _pct(exact, 99), "true_ttft_exact_p99_ms": _pct(exact_true, 99),
        "itl_p99_ms": _pct(itl, 99), "true_itl_p99_ms": _pct(itl_true, 99),
        "itl_err_p99_ms": _pct(itl_err, 99), "itl_err_p1_ms": _pct(itl_err, 1),
        "client_delay_p50_ms": _pct(delay, 50), "client_delay_p99_ms": _pct(delay, 99),
        "upstream_p50_ms": _pct(upstream, 50), "upstream_p99_ms": _pct(upstream, 99),
        "downstream_p50_ms": _pct(downstream, 50), "downstream_p99_ms": _pct(downstream, 99),
        "coalesced_share": coalesced / events if events else math.nan,
        "first_coalesced_share": first_coalesced / len(ttft) if ttft else math.nan,
    }  # fmt: skip


def child(url: str, args: argparse.Namespace, out: Path, window_file: Path) -> None:
    import time

    from bringup.bench.workers import run_on_fast_loop

    if args.child_nice:
        os.nice(args.child_nice)
    clock, records = run_on_fast_loop(_child_records(url, args))
    deadline = time.monotonic() + 60
    while not window_file.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.2)
    t0, t1 = (float(x) for x in window_file.read_text().split())
    data = errors_of(records, t0, t1) | {"arrival_clock": clock}
    out.write_text(json.dumps(data))


# ---------------------------------------------------------------- the parent


def run_bringup(fake: FakeServerProcess, run: Run, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out, window = Path(tmp) / "out.json", Path(tmp) / "window"
        window.write_text("")
        argv = [sys.executable, __file__, "--child", fake.url, "--child-out", str(out)]
        argv += ["--child-window", str(window), "--child-nice", str(args.client_nice)]
        argv += [] if run.kernel else ["--child-client-clock"]
        argv += _shared(args)
        with cpu_hogs(run.hogs, niceness=args.client_nice):
            run.fig = drive(f"bringup-{run.name}", argv, fake, args, window_file=window)
        run.data = json.loads(out.read_text()) if out.exists() else {}


def _shared(args: argparse.Namespace) -> list[str]:
    return [
        "--streams", str(args.streams), "--rate", str(args.rate), "--seconds", str(args.seconds),
        "--tokens", str(args.tokens), "--ttft", str(args.ttft),
    ]  # fmt: skip


def _f(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def report(runs: list[Run], peers: list[Figures], args: argparse.Namespace, prio: str) -> None:
    print(
        f"load: {args.streams} streams, first token at {args.ttft * 1000:g} ms, then one every "
        f"{1000 / args.rate:g} ms, {args.tokens} tokens; {prio}"
    )
    cols = (
        "run", "clock", "reqs", "ttft p50/p99", "true p50/p99", "ttft err p99",
        "ttft(intent) p99", "itl p99", "true itl p99", "itl err p99", "delay p50/p99",
        "coalesced (1st)", "up/down p99", "srv late p99", "cpu us/ev",
    )  # fmt: skip
    print(" | ".join(cols))
    for r in runs:
        d, fig = r.data or {}, r.fig
        g = d.get
        print(
            " | ".join(
                [
                    r.name,
                    str(g("arrival_clock")),
                    str(g("requests")),
                    f"{_f(g('ttft_p50_ms'))}/{_f(g('ttft_p99_ms'))}",
                    f"{_f(g('true_ttft_p50_ms'))}/{_f(g('true_ttft_p99_ms'))}",
                    _f(g("ttft_err_p99_ms"), 3),
                    _f(g("ttft_from_intent_p99_ms")),
                    _f(g("itl_p99_ms")),
                    _f(g("true_itl_p99_ms")),
                    _f(g("itl_err_p99_ms"), 3),
                    f"{_f(g('client_delay_p50_ms'), 3)}/{_f(g('client_delay_p99_ms'), 3)}",
                    f"{_f(g('coalesced_share'), 4)} ({_f(g('first_coalesced_share'), 4)})",
                    f"{_f(g('upstream_p99_ms'), 3)}/{_f(g('downstream_p99_ms'), 3)}",
                    _f(fig.extra.get("server_send_lateness_p99_ms") if fig else None),
                    _f(fig.cpu_us_per_event if fig else None, 1),
                ]
            )
            + (f"  {fig.note}" if fig and fig.note else "")
        )
    for p in peers:
        cpu = _f(p.cpu_us_per_event, 1)
        print(f"peer {p.tool}: {_f(p.events_s, 0)} events/s, {cpu} cpu us/ev {p.note}")

    def diff(run: Run, key: str) -> float:
        d = run.data or {}
        return float(d.get(key, math.nan)) - float(d.get(f"true_{key}", math.nan))

    quiet, hogs = runs[0], runs[1]
    for r in (quiet, hogs):
        d = r.data or {}
        print(
            f"{r.name}: TTFT p99 error over first tokens read alone (exact stamps) "
            f"{diff(r, 'ttft_exact_p99_ms'):.3f} ms, {d.get('exact_requests')} of "
            f"{d.get('requests')} requests; the other "
            f"{_f(d.get('first_coalesced_share', math.nan) * 100, 2)}% are upper bounds"
        )
    measured = [p.cpu_us_per_event for p in peers if not math.isnan(p.cpu_us_per_event)]
    best = min(measured, default=math.nan)
    cpu = quiet.fig.cpu_us_per_event if quiet.fig else math.nan
    share = (hogs.data or {}).get("coalesced_share", math.nan)
    print(
        f"ttft_p99_error_ms={diff(quiet, 'ttft_p99_ms'):.3f} "
        f"ttft_p99_error_hogs_ms={diff(hogs, 'ttft_p99_ms'):.3f} "
        f"itl_p99_error_hogs_ms={diff(hogs, 'itl_p99_ms'):.3f} "
        f"coalesced_share={share:.4f} cpu_us_per_event={cpu:.2f} "
        f"best_peer_cpu_us_per_event={best:.2f}"
    )


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--streams", type=int, default=256)
    p.add_argument("--rate", type=float, default=50.0, help="tokens/s per stream after the first")
    p.add_argument("--ttft", type=float, default=0.05, help="server's time to first token, s")
    p.add_argument("--tokens", type=int, default=64, help="output tokens per request")
    p.add_argument("--seconds", type=float, default=30.0, help="length of each client's run")
    p.add_argument("--ramp", type=float, default=8.0, help="seconds before the window opens")
    p.add_argument("--window", type=float, default=15.0, help="measured window, s")
    p.add_argument("--hogs", type=int, default=2, help="CPU hogs beside the client")
    p.add_argument("--peers", default="guidellm,aiperf,vllm", help="comma list, or 'none'")
    p.add_argument("--no-client-clock", action="store_true", help="skip the own-clock runs")
    p.add_argument("--peer-venv", action="append", default=[], metavar="TOOL=PATH")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    p.add_argument("--child-window", help=argparse.SUPPRESS)
    p.add_argument("--child-nice", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--child-client-clock", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.processes = 1
    if args.child:
        args.child_kernel = not args.child_client_clock
        child(args.child, args, Path(args.child_out), Path(args.child_window))
        return
    if args.ramp + args.window + 5 > args.seconds:
        p.error("--seconds must exceed --ramp + --window + 5")
    server = FakeServerConfig(
        event_rate=args.rate, tokens_per_event=1, ttft_s=args.ttft, model="fake-model",
        kernel_stamps=True,
    )  # fmt: skip
    runs = [Run("quiet", 0, True), Run("hogs", args.hogs, True)]
    if not args.no_client_clock:
        runs += [Run("quiet-own-clock", 0, False), Run("hogs-own-clock", args.hogs, False)]
    try:
        fake = FakeServerProcess(server, niceness=SERVER_NICE).start()
        args.client_nice = 0
        prio = f"server at niceness {SERVER_NICE}, client and hogs at 0"
    except PermissionError:
        fake = FakeServerProcess(server).start()
        args.client_nice = CLIENT_NICE
        prio = f"server at niceness 0, client and hogs at {CLIENT_NICE}"
    peers: list[Figures] = []
    try:
        for run in runs:
            run_bringup(fake, run, args)
        for tool in [t for t in args.peers.split(",") if t and t != "none"]:
            peers.append(run_peer(tool, fake, args))
    finally:
        fake.stop()
    report(runs, peers, args, prio)


if __name__ == "__main__":
    main()
