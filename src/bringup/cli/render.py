"""Terminal rendering of sweep progress and results (rich).

Every value shown here may come from an engine, a server or a spec (flag values, log
lines, versions): each goes into a :class:`rich.text.Text` through
:func:`bringup.textsafe.printable`, never into markup, so escape sequences are spelled out
and brackets such as ``[/]`` are shown as written. Secret-named flags show ``***`` and
the launch command is redacted.

The result table fits 80 columns: searched flags by short names with a legend under the
table (departures from the reference only), cells that wrap instead of ending in an
ellipsis, and each failure's decisive line printed under the table at full width.
"""

from __future__ import annotations

import re
import shlex
import time
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from bringup.checks.speculative import speculative_warnings
from bringup.contention import contention_warnings, cpu_left_cell
from bringup.report.outcome import no_winner_reason, reference_failure, verdict_counts
from bringup.secrets import MASK, is_secret_name, redact_argv
from bringup.spec import Spec
from bringup.sweep import SweepEvent, SweepOutcome
from bringup.textsafe import printable
from bringup.verdict import Status, TrialResult

STYLE = {
    "passed": "green",
    "failed": "red",
    "interrupted": "yellow",
    "running": "cyan",
    "unchecked": "yellow",
}


class ProgressLine:
    """A live line: trial k of n, the stage, elapsed time (recomputed at each refresh)."""

    def __init__(self, spec: Spec, keep: int | None = 12) -> None:
        self.spec = spec
        # a terminal shows the last ``keep`` finished trials; a file or pipe (``None``)
        # gets every one, a line each, since nothing scrolls back there
        self.keep = keep
        self.event: SweepEvent | None = None
        self.started = time.monotonic()
        self.done: list[Text] = []

    def update(self, event: SweepEvent) -> None:
        self.event = event
        if event.message in ("done", "reused"):
            self.done.append(_one_line(event.trial, self.spec, event.index, event.planned_total))

    def __rich__(self) -> Group:
        lines: list[Text] = list(self.done if self.keep is None else self.done[-self.keep :])
        e = self.event
        elapsed = time.monotonic() - self.started
        if e is not None and e.message not in ("done", "reused"):
            lines.append(
                Text.assemble(
                    (
                        f"trial {e.index} of {'' if e.exact_total else '≤'}{e.planned_total}",
                        "bold cyan",
                    ),
                    " ",
                    (e.stage.value, "magenta"),
                    f" {_flags(e.trial.flags, self.spec)} ",
                    (printable(e.message), "dim"),
                    f"  elapsed {elapsed:5.1f}s",
                )
            )
        else:
            lines.append(Text(f"elapsed {elapsed:5.1f}s"))
        return Group(*lines)


def _flags(flags: dict[str, Any], spec: Spec) -> str:
    axes = spec.axes()
    shown = [f"{k}={MASK if is_secret_name(k) else v}" for k, v in flags.items() if k in axes]
    return printable(" ".join(shown) or "(reference)")


def flag_legend(spec: Spec) -> dict[str, str]:
    """A short, unique name per searched flag: ``--cache-type-k`` -> ``ctk``.

    The initials of the flag's words; where two flags share them, the first word is kept
    whole. The table prints the legend, so the short names stay readable at 80 columns.
    """
    legend: dict[str, str] = {}
    for flag in spec.axes():
        words = [w for w in re.split(r"[-_.]+", flag.lstrip("-")) if w]
        short = "".join(w[0] for w in words) or flag
        if short in legend.values():
            short = words[0] + "".join(w[0] for w in words[1:]) if words else flag
        while short in legend.values():
            short += "'"
        legend[flag] = printable(short)
    return legend


def _legend_caption(legend: dict[str, str], reused: bool = False) -> Text:
    names = ", ".join(f"{s}={printable(f)}" for f, s in legend.items())
    cpu = "CPU: share of the machine left to the benchmark (! = under contention)"
    if reused:
        cpu += "\n(reused): an earlier trial's verdict (same configuration and fingerprint)"
    return Text(f"flags: {names} (the reference's values omitted)\n{cpu}" if names else cpu)


def _short_flags(flags: dict[str, Any], legend: dict[str, str], spec: Spec) -> str:
    """The departures from the reference, in short names; the reference's values are implied."""
    ref = spec.reference
    shown = [
        f"{legend[k]}={MASK if is_secret_name(k) else v}"
        for k, v in flags.items()
        if k in legend and str(ref.get(k)) != str(v)
    ]
    return printable(" ".join(shown) or "(reference)")


def _one_line(trial: TrialResult, spec: Spec, index: int, total: int) -> Text:
    status = trial.status.value
    why = f" {trial.failure.category.value}" if trial.failure else ""
    return Text.assemble(
        f"  {index:>3}. ",
        (status, STYLE.get(status, "white")),
        f"{why} {_flags(trial.flags, spec)}",
    )


# llama.cpp prefixes each line with its clock and level ("0.00.886.498 E "); the table
# shows the message, the store keeps the line verbatim
_LOG_PREFIX = re.compile(r"\b\d+\.\d+\.\d+\.\d+ [DIWE] ")


def _short(line: str, limit: int = 400) -> str:
    line = printable(_LOG_PREFIX.sub("", line).strip())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _fmt(v: Any, digits: int = 1) -> str:
    if isinstance(v, int | float):
        return f"{v:.{digits}f}"
    return "-"


def results_table(outcome: SweepOutcome, spec: Spec) -> Table:
    """One row per trial in short flag names; every cell wraps, none is cut to an ellipsis.

    The decisive line of each failure is printed under the table (``trial_details``), where
    it has the whole width: inside an 80-column table it would be a column of fragments.
    """
    legend = flag_legend(spec)
    table = Table(
        title=Text(f"run {outcome.run_id}"),
        caption=_legend_caption(legend, bool(outcome.reused)),
        caption_justify="left",
        show_lines=False,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1),
    )
    table.add_column("#", justify="right", overflow="fold")
    table.add_column("flags", overflow="fold", ratio=1)
    # wide enough for the longest category on its own line: words wrap, none is split
    longest = max((len(r.failure.category.value) for r in outcome.results if r.failure), default=8)
    table.add_column("verdict", overflow="fold", min_width=min(longest, 24))
    table.add_column("dec t/s", justify="right", overflow="fold")
    table.add_column("TTFT ms", justify="right", overflow="fold")
    table.add_column("out t/s", justify="right", overflow="fold")
    table.add_column("CPU", justify="right", overflow="fold")
    winner = outcome.winner.trial_id if outcome.winner else None
    for i, r in enumerate(outcome.results, 1):
        status = r.status.value + (" *" if r.trial_id == winner else "")
        verdict = Text(status, STYLE.get(r.status.value, "white"))
        if r.failure:
            verdict += Text(f" {r.failure.category.value}")
        if r.trial_id in outcome.reused:  # an earlier verdict, not measured in this run
            verdict += Text(" (reused)", "dim")
        table.add_row(
            str(i),
            Text(_short_flags(r.flags, legend, spec)),
            verdict,
            _fmt(r.metrics.get("decode_tok_s_single")),
            _fmt(r.metrics.get("ttft_p50_ms")),
            _fmt(r.metrics.get("output_tok_s")),
            cpu_left_cell(r.contention),
        )
    return table


def trial_details(outcome: SweepOutcome) -> list[str]:
    """Per row of the table with something to say: the failure's stage and decisive line."""
    lines = []
    for i, r in enumerate(outcome.results, 1):
        if r.failure:
            line = r.failure.evidence[0] if r.failure.evidence else (r.failure.detail or "")
            lines.append(
                f"{i:>3}. {r.failure.category.value} ({r.failure.stage.value}): {_short(line)}"
            )
        elif r.status is Status.UNCHECKED:
            lines.append(f"{i:>3}. unchecked: accuracy not judged, the reference failed")
        elif r.note:
            lines.append(f"{i:>3}. {printable(r.note)}")
    return lines


def print_outcome(console: Console, outcome: SweepOutcome, spec: Spec) -> None:
    ref_failed = reference_failure(outcome.results, spec)
    if ref_failed:  # said first: every accuracy verdict below depends on it
        console.print(Text(printable(ref_failed), "bold red"))
    console.print(results_table(outcome, spec))
    for line in trial_details(outcome):
        console.print(Text(line))
    console.print(Text("verdicts: " + verdict_counts(outcome.results)))
    groups: dict[tuple[str | None, str], int] = {}
    for p in outcome.planner.pruned:
        key = (p.by_trial, _short(p.reason.splitlines()[0] if p.reason else ""))
        groups[key] = groups.get(key, 0) + 1
    for (by_trial, reason), n in groups.items():
        by = f" by {by_trial}" if by_trial else ""
        console.print(Text(f"pruned {n} configuration{'s' * (n != 1)}{by}: {reason}", "dim"))
    for note in outcome.planner.notes:
        console.print(Text(f"note: {printable(note)}", "dim"))
    warnings = contention_warnings([(r.trial_id, r.contention) for r in outcome.results])
    warnings += speculative_warnings([(r.trial_id, r.checks) for r in outcome.results])
    for warning in warnings:
        console.print(Text.assemble(("warning:", "yellow"), f" {printable(warning)}"))
    if outcome.winner is None:
        console.print(Text(printable(no_winner_reason(outcome.results, spec)), "bold red"))
        return
    win = next(r for r in outcome.results if r.trial_id == outcome.winner.trial_id)
    console.print(
        Text.assemble(
            ("winner", "bold green"),
            f" {_flags(win.flags, spec)} — {printable(outcome.winner.reason)}",
        )
    )
    console.print("launch command:")
    console.print(_command(win.command), soft_wrap=True, markup=False, highlight=False)


def _command(argv: list[str]) -> str:
    """The command line as a shell would take it, secrets masked, control characters spelled."""
    return printable(shlex.join(redact_argv(argv)))


def print_live_server(console: Console, trial: TrialResult, url: str, pid: int | None) -> None:
    up = trial.status is Status.PASSED
    status = Text("up", "green") if up else Text(trial.status.value)
    console.print(status + Text(f" {url} pid {pid if pid is not None else '(adopted)'}"))
    if trial.command:
        console.print(_command(trial.command), soft_wrap=True, markup=False, highlight=False)
