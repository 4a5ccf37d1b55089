"""Terminal rendering of sweep progress and results (rich).

Every value shown here may come from an engine, a server or a spec (flag values, log
lines, versions): each goes into a :class:`rich.text.Text` through
:func:`bringup.textsafe.printable`, never into markup, so escape sequences are spelled out
and brackets such as ``[/]`` are shown as written. Secret-named flags show ``***`` and
the launch command is redacted.
"""

from __future__ import annotations

import re
import shlex
import time
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from bringup.secrets import MASK, is_secret_name, redact_argv
from bringup.spec import Spec
from bringup.sweep import SweepEvent, SweepOutcome
from bringup.textsafe import printable
from bringup.verdict import Status, TrialResult

STYLE = {"passed": "green", "failed": "red", "interrupted": "yellow", "running": "cyan"}


class ProgressLine:
    """A live line: trial k of n, the stage, elapsed time (recomputed at each refresh)."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.event: SweepEvent | None = None
        self.started = time.monotonic()
        self.done: list[Text] = []

    def update(self, event: SweepEvent) -> None:
        self.event = event
        if event.message in ("done", "reused"):
            self.done.append(_one_line(event.trial, self.spec, event.index, event.planned_total))

    def __rich__(self) -> Group:
        lines: list[Text] = list(self.done[-12:])
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
    shown = [f"{k}={MASK if is_secret_name(k) else v}" for k, v in flags.items() if k in spec.space]
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


def _short(line: str, limit: int = 160) -> str:
    line = printable(_LOG_PREFIX.sub("", line).strip())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _fmt(v: Any, digits: int = 1) -> str:
    if isinstance(v, int | float):
        return f"{v:.{digits}f}"
    return "-"


def results_table(outcome: SweepOutcome, spec: Spec) -> Table:
    table = Table(title=Text(f"run {outcome.run_id}"), show_lines=False, expand=False)
    table.add_column("#", justify="right")
    table.add_column("flags")
    table.add_column("verdict")
    table.add_column("category / decisive line", overflow="fold", max_width=70)
    table.add_column("decode tok/s", justify="right")
    table.add_column("TTFT p50 ms", justify="right")
    table.add_column("out tok/s", justify="right")
    winner = outcome.winner.trial_id if outcome.winner else None
    for i, r in enumerate(outcome.results, 1):
        status = r.status.value + (" *" if r.trial_id == winner else "")
        cat = Text("")
        if r.failure:
            line = r.failure.evidence[0] if r.failure.evidence else (r.failure.detail or "")
            cat = Text(f"{r.failure.category.value} ({r.failure.stage.value}): {_short(line)}")
        elif r.note:
            cat = Text(printable(r.note), "dim")
        table.add_row(
            str(i),
            Text(_flags(r.flags, spec)),
            Text(status, STYLE.get(r.status.value, "white")),
            cat,
            _fmt(r.metrics.get("decode_tok_s_single")),
            _fmt(r.metrics.get("ttft_p50_ms")),
            _fmt(r.metrics.get("output_tok_s")),
        )
    return table


def print_outcome(console: Console, outcome: SweepOutcome, spec: Spec) -> None:
    console.print(results_table(outcome, spec))
    counts: dict[str, int] = {}
    for r in outcome.results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    console.print(Text("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))))
    groups: dict[tuple[str | None, str], int] = {}
    for p in outcome.planner.pruned:
        key = (p.by_trial, _short(p.reason.splitlines()[0] if p.reason else ""))
        groups[key] = groups.get(key, 0) + 1
    for (by_trial, reason), n in groups.items():
        by = f" by {by_trial}" if by_trial else ""
        console.print(Text(f"pruned {n} configuration{'s' * (n != 1)}{by}: {reason}", "dim"))
    for note in outcome.planner.notes:
        console.print(Text(f"note: {printable(note)}", "dim"))
    if outcome.winner is None:
        console.print(Text("no configuration passed every stage", "bold red"))
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
