"""``bringup profile TRIAL``: where a configuration's decode step goes, against the reference.

An engine with profiling endpoints (its adapter's ``profiling``): the trial's configuration
and the run's reference are each launched with them and traced under a decode load
(:mod:`bringup.profile.live`); ``--trace`` / ``--reference-trace`` read traces taken
before instead. An engine without them may compare the trial's decode another way (its
adapter's ``compare_decode``, e.g. against the engine's own kernel benchmark); this
command prints and records what that finds. No engine is named here.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from bringup.engines.registry import get_engine
from bringup.errors import SpecError
from bringup.profile.trace import TraceSummary, summarize
from bringup.profile.verdict import Bottleneck, bottleneck, diff
from bringup.spec import Spec
from bringup.store import Store
from bringup.sweep import SweepOptions


def _print(summary: TraceSummary, ref: TraceSummary | None, neck: Bottleneck, top: int) -> None:
    click.echo(
        f"{summary.source}: {summary.decode_steps} decode steps (batch {summary.batch:g}), "
        f"step {summary.step_wall_us:.0f} us, kernels {summary.kernel_us:.0f} us, "
        f"GPU busy {summary.gpu_busy:.0%}"
    )
    if ref is not None:
        click.echo(
            f"reference {ref.source}: step {ref.step_wall_us:.0f} us, kernels "
            f"{ref.kernel_us:.0f} us, GPU busy {ref.gpu_busy:.0%}"
        )
    for title, rows, ref_rows in (
        ("ops", summary.top_ops, ref.top_ops if ref else None),
        ("kernels", summary.top_kernels, ref.top_kernels if ref else None),
    ):
        click.echo(
            f"top {title} by share of decode kernel time" + (" (vs reference)" if ref else "")
        )
        for d in diff(rows, ref_rows)[:top]:
            extra = f"  ref {d.reference_share:6.1%}  {d.excess:+6.1%}" if ref else ""
            click.echo(f"  {d.share:6.1%}{extra}  {d.name[:90]}")
    click.echo(f"bottleneck: {neck.kind}: {neck.reason}")
    if neck.flag:
        click.echo(f"flag: {neck.flag}")


def _trial(db: str, trial_id: str) -> tuple[Spec, dict[str, Any], dict[str, Any], dict[str, Any]]:
    store = Store(db)
    row = store.trial(trial_id)
    if row is None:
        raise SpecError(f"no trial {trial_id!r} in {db}; give an id that `bringup report` lists.")
    run = store.run(row.run_id) or {}
    spec = Spec.model_validate(run.get("spec") or {})
    return spec, dict(row.flags), spec.reference_config(), dict(row.metrics)


@click.command("profile")
@click.argument("trial", required=False)
@click.option("--db", default="bringup.db", show_default=True, help="SQLite results file.")
@click.option("--runs-dir", default="runs", show_default=True, help="Folder for engine logs.")
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Summarize this torch-profiler trace instead of taking one.",
)
@click.option(
    "--reference-trace",
    type=click.Path(exists=True, dir_okay=False),
    help="The reference configuration's trace, to compare with.",
)
@click.option("--no-reference", is_flag=True, help="Do not profile the reference as well.")
@click.option(
    "--out",
    "out_dir",
    default="profiles",
    show_default=True,
    help="Folder the engine writes its traces to.",
)
@click.option("--seconds", default=2.0, show_default=True, help="How long the profile runs.")
@click.option("--concurrency", default=16, show_default=True, help="Streams decoding meanwhile.")
@click.option(
    "--eager", is_flag=True, help="With --trace: the traced engine ran without CUDA graphs."
)
@click.option("--top", default=8, show_default=True, help="Rows per table.")
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False),
    help="Also write the summaries and the bottleneck as JSON here.",
)
def profile(
    trial: str | None,
    db: str,
    runs_dir: str,
    trace_path: str | None,
    reference_trace: str | None,
    no_reference: bool,
    out_dir: str,
    seconds: float,
    concurrency: int,
    eager: bool,
    top: int,
    json_out: str | None,
) -> None:
    """Profile TRIAL's configuration (or read --trace) and name its bottleneck."""
    record: dict[str, Any] = {"trial": trial}
    if trace_path is None and trial is None:
        raise SpecError("give a TRIAL id from `bringup report`, or --trace FILE.")
    if trace_path is None:
        assert trial is not None
        spec, flags, ref_flags, metrics = _trial(db, trial)
        record["engine"] = spec.engine.name
        comparison = get_engine(spec.engine.name).compare_decode(spec, flags, metrics)
        if comparison is not None:
            click.echo(comparison.text)
            record |= comparison.record
            _write(json_out, record)
            return
        from bringup.profile.live import capture

        options = SweepOptions(runs_dir=runs_dir)
        store = Store(db)
        base = Path(out_dir)
        trace_path = str(
            asyncio.run(
                capture(
                    spec,
                    flags,
                    base / trial,
                    store,
                    options,
                    seconds=seconds,
                    concurrency=concurrency,
                )
            )
        )
        same = all(flags.get(k) == v for k, v in ref_flags.items())
        if not no_reference and not same:
            reference_trace = str(
                asyncio.run(
                    capture(
                        spec,
                        ref_flags,
                        base / "reference",
                        store,
                        options,
                        seconds=seconds,
                        concurrency=concurrency,
                    )
                )
            )
        eager = bool(flags.get("--enforce-eager")) or "--enforce-eager" in spec.launch.args
    summary = summarize(trace_path, top=max(top, 10))
    ref = summarize(reference_trace, top=max(top, 10)) if reference_trace else None
    neck = bottleneck(summary, ref, eager=eager)
    _print(summary, ref, neck, top)
    record |= {
        "summary": summary.to_dict(),
        "reference": ref.to_dict() if ref else None,
        "bottleneck": neck.__dict__,
    }
    _write(json_out, record)


def _write(path: str | None, record: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(record, indent=2) + "\n")
