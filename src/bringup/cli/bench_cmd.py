"""``bringup bench URL``: benchmark any running OpenAI-compatible server.

A thin shell over :func:`bringup.bench.run_benchmark_sync`: parses the levels, prints one
table row per level (or, with ``--json``, the whole report as one JSON line on stdout) and
exits 1 when no request succeeded. Progress goes to stderr a line at a time: each measured
window as it starts and ends, and every few seconds while one runs.
"""

from __future__ import annotations

import sys

import click
import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bringup.bench import BenchConfig, BenchReport, Distribution, run_benchmark_sync
from bringup.bench.client import check_reachable
from bringup.textsafe import printable


def _floats(text: str | None) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()] if text else []


def _ints(text: str | None) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()] if text else []


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_table(report: BenchReport) -> Table:
    table = Table(title=Text(printable(f"bringup bench: {report.model or 'model ?'}")))
    for head in (
        "level", "ok", "err", "out tok/s", "req/s", "TTFT p50", "TTFT p99", "ITL p50",
        "ITL p99", "TPOT p50", "E2E p99", "queue p99", "late p99",
    ):  # fmt: skip
        table.add_column(head, justify="right")
    for lv in report.levels:
        m = lv.metrics

        def q(name: str, p: str, lat: dict[str, Distribution] = m.latency) -> str:
            d = lat.get(name)
            return _fmt(getattr(d, p) if d else None)

        tput = _fmt(m.output_tok_s)
        ci = m.across_repeats.get("output_tok_s")
        if ci is not None and ci.n > 1:
            tput += f" ±{(ci.hi - ci.lo) / 2:.1f}"
        table.add_row(
            lv.tag, str(m.completed), str(m.failed), tput, _fmt(m.requests_s, 2),
            q("ttft_ms", "p50"), q("ttft_ms", "p99"), q("itl_ms", "p50"), q("itl_ms", "p99"),
            q("tpot_ms", "p50"), q("e2e_ms", "p99"), q("queue_ms", "p99"),
            q("send_lateness_ms", "p99"),
        )  # fmt: skip
    return table


@click.command("bench")
@click.argument("url")
@click.option("--concurrency", "-c", default="1", help="Closed-loop levels, e.g. 1,4,16.")
@click.option("--rate", "-r", default=None, help="Open-loop request rates (req/s), e.g. 1,2.5.")
@click.option("--arrival", type=click.Choice(["poisson", "constant"]), default="poisson")
@click.option("--input-tokens", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--output-tokens", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--requests", type=click.IntRange(min=1), default=16, show_default=True,
              help="Requests per level and repeat, at least twice a closed-loop level's "
              "concurrency (ignored when --duration is set).")  # fmt: skip
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per level and repeat; replaces --requests as the bound.")  # fmt: skip
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True)
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--endpoint", type=click.Choice(["completions", "chat"]), default="completions")
@click.option("--model", default=None, help="Model name to send (default: first of /v1/models).")
@click.option(
    "--api-key", envvar="BRINGUP_API_KEY", default=None, help="Bearer token (env BRINGUP_API_KEY)."
)
@click.option("--max-concurrency", type=click.IntRange(min=1), default=None,
              help="Cap on in-flight requests for --rate levels.")  # fmt: skip
@click.option("--processes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Client processes sharing the load.")  # fmt: skip
@click.option("--timeout", type=float, default=300.0, show_default=True, help="Per request, s.")
@click.option("--no-ignore-eos", is_flag=True, help="Let the model stop at EOS.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as one JSON line.")
def bench(
    url: str, concurrency: str, rate: str | None, arrival: str, input_tokens: int,
    output_tokens: int, requests: int, duration: float | None, warmup: int, repeats: int,
    endpoint: str, model: str | None, api_key: str | None, max_concurrency: int | None,
    processes: int, timeout: float, no_ignore_eos: bool, as_json: bool,
) -> None:  # fmt: skip
    """Benchmark the OpenAI-compatible server at URL (e.g. http://127.0.0.1:8080)."""
    try:
        rates = _floats(rate)
        # with only --rate given, run no closed-loop level
        levels = _ints(concurrency) if concurrency_given() or not rates else []
        cfg = BenchConfig(
            concurrency=levels, request_rate=rates, arrival=arrival,  # type: ignore[arg-type]
            input_tokens=input_tokens, output_tokens=output_tokens, requests=requests,
            warmup=warmup, duration_s=duration, repeats=repeats,
            endpoint=endpoint,  # type: ignore[arg-type]
            model=model, api_key=api_key, timeout_s=timeout, ignore_eos=not no_ignore_eos,
            max_concurrency=max_concurrency, processes=processes,
        )  # fmt: skip
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    check_reachable(url, answer_timeout_s=timeout)
    report = run_benchmark_sync(url, cfg, lambda line: click.echo(f"bench {line}", err=True))
    if as_json:
        sys.stdout.write(orjson.dumps(report.to_dict()).decode() + "\n")
    else:
        console = Console()
        console.print(render_table(report))
        for lv in report.levels:
            delay = lv.metrics.latency.get("client_delay_ms")
            if delay is not None:
                console.print(
                    f"{lv.tag}: client delay p50 {delay.p50:.2f} ms, p99 {delay.p99:.2f} ms; "
                    f"{lv.metrics.coalesced_share:.1%} of events came in one read with the "
                    f"one before; {lv.metrics.ttft_upper_bound_share:.1%} of TTFTs are upper "
                    "bounds (the first token was read with later bytes)"
                )
        for note in report.notes:
            console.print(Text(f"note: {printable(note)}"))
        for kind, count in report.errors().items():
            example = next(
                (lv.error_examples[kind] for lv in report.levels if kind in lv.error_examples), ""
            )
            console.print(Text(printable(f"errors: {count} x {kind} {example}".rstrip())))
    if sum(lv.metrics.completed for lv in report.levels) == 0:
        click.echo(
            printable(
                f"error: no request to {url} succeeded ({report.errors()}); is the server up?"
            ),
            err=True,
        )
        sys.exit(1)


def concurrency_given() -> bool:
    """Whether --concurrency/-c was on the command line (with only --rate, run no closed loop)."""
    ctx = click.get_current_context()
    return ctx.get_parameter_source("concurrency") == click.core.ParameterSource.COMMANDLINE
