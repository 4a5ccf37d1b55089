"""The terminal summary of a run, as plain text (the CLI prints it; no terminal UI here).

First, when the accuracy check is on and the reference never passed, the sentence saying
so (its candidates' accuracy was not judged); then verdict counts, the winner, the top
passing configurations with their key figures, one example per failure category
(evidence line and remedy), pruned configurations and what pruned them, benchmarks taken
under CPU contention, the fingerprint and the engine version.
"""

from __future__ import annotations

from typing import Any

from bringup.checks.speculative import speculative_warnings
from bringup.contention import contention_warnings, cpu_left_cell
from bringup.report.model import KEY_FIGURES, RunReport
from bringup.report.tradeoff import launch_noise, threshold_hint, tradeoff_rows
from bringup.store import TrialRow

TOP = 5
STATUS_ORDER = ("passed", "unchecked", "failed", "interrupted", "running", "skipped", "pruned")


def fmt(value: Any, digits: int = 1) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:,.{digits}f}"


def short_id(trial_id: str, run_id: str) -> str:
    return trial_id.removeprefix(run_id + "-")


def table(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        out = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return (indent + "  ".join(out)).rstrip()

    return [line(header), *(line(r) for r in rows)]


def fingerprint_line(fp: dict[str, Any]) -> str:
    gpus = fp.get("gpus") or []
    if gpus:
        names = sorted(
            {
                f"{g.get('name')} (cc {g.get('compute_capability')}, driver {g.get('driver')})"
                for g in gpus
            }
        )
        hw = f"{len(gpus)}x " + ", ".join(names)
    else:
        hw = "no GPU"
    return f"{fp.get('cpu', '?')} x{fp.get('cores', '?')} cores; {hw}"


def verdict_counts(report: RunReport) -> str:
    counts = report.counts
    parts = [f"{counts[s]} {s}" for s in STATUS_ORDER if counts.get(s)]
    parts += [f"{n} {s}" for s, n in counts.items() if s not in STATUS_ORDER]
    return ", ".join(parts) or "no trials"


def _tradeoff(report: RunReport) -> list[str]:
    rows = tradeoff_rows(report)
    if not rows:
        return []
    rid = report.run_id
    out = ["", "accuracy against speed (drift of greedy answers from the reference's):"]
    noise = launch_noise(report, rows)
    if noise is not None and len(noise.values) > 1:
        runs = ", ".join(fmt(v) for v in noise.values)
        out.append(
            f"  the reference launched {len(noise.values)} times: {report.objective} {runs}"
            f" (+-{noise.spread:.1%} between launches); gains inside that are marked ~"
        )
    header = ["trial", "configuration", report.objective, "vs ref launches"]
    header += ["logprob MAD [95% CI]"]
    header += ["x control", "token agreement", "verdict"]
    body = []
    for r in rows:
        ci = f" [{r.mad_ci[0]:.3f}, {r.mad_ci[1]:.3f}]" if r.mad_ci else ""
        body.append(
            [
                short_id(r.trial.id, rid) + (" (control)" if r.control else ""),
                report.label(r.trial.flags),
                fmt(r.objective),
                (f"{r.gain:+.1%}" + ("~" if r.within_noise else "")) if r.gain is not None else "-",
                f"{r.mad:.3f}{ci}",
                f"{r.over_control:.1f}x" if r.over_control is not None else "-",
                fmt(r.agreement, 2),
                r.verdict,
            ]
        )
    out += table(header, body)
    hint = threshold_hint(rows)
    out.append(
        f"  {hint}"
        if hint
        else "  no control: name a flag that cannot change greedy"
        " output in [checks] controls (e.g. a seed) and sweep it to measure the floor"
    )
    return out


def _reused(trial: TrialRow) -> str:
    """A verdict this run took from an earlier trial says so where it is shown."""
    return f" (reused from {trial.reused_from})" if trial.reused_from else ""


def _reused_count(report: RunReport) -> str:
    n = sum(1 for t in report.trials if t.reused_from)
    return f" ({n} reused from earlier trials, not run again)" if n else ""


def render_text(report: RunReport) -> str:
    run, rid = report.run, report.run_id
    fp = report.fingerprint
    lines = [report.reference_failed] if report.reference_failed else []
    lines += [
        f"run {rid}  {run.get('engine')} {report.engine_version}  status {run.get('status')}"
        + (f"  spec {run['spec_path']}" if run.get("spec_path") else ""),
        f"machine: {fingerprint_line(fp)}",
        f"model: {fp.get('model') or '?'}"
        + (f" (sha256 {str(fp['model_sha256'])[:12]})" if fp.get("model_sha256") else ""),
        f"verdicts: {verdict_counts(report)}" + _reused_count(report),
    ]
    win = report.winner
    if win is not None:
        value = win.metrics.get(report.objective)
        lines.append(
            f"winner: {short_id(win.id, rid)}  {report.label(win.flags)}  "
            f"{report.objective} {fmt(value)}"
        )
    else:
        lines.append("winner: none (no configuration passed every check)")

    passed = report.passed()
    if passed:
        lines += ["", f"top configurations (by {report.objective}):"]
        header = [
            "trial",
            "configuration",
            *(name for _, name in KEY_FIGURES),
            "ready s",
            "CPU left",
        ]
        rows = [
            [
                short_id(t.id, rid)
                + (" *" if win is not None and t.id == win.id else "")
                + _reused(t),
                report.label(t.flags),
                *(fmt(t.metrics.get(key)) for key, _ in KEY_FIGURES),
                fmt(t.timings.get("ready_s")),
                cpu_left_cell(t.contention),
            ]
            for t in passed[:TOP]
        ]
        lines += table(header, rows)
        if len(passed) > TOP:
            lines.append(f"  ... and {len(passed) - TOP} more passing")

    lines += _tradeoff(report)

    warnings = contention_warnings([(short_id(t.id, rid), t.contention) for t in report.trials])
    if warnings:
        lines += ["", "contention (CPU others took while benchmarks ran):"]
        lines += [f"  warning: {w}" for w in warnings]

    flattered = speculative_warnings([(short_id(t.id, rid), t.checks) for t in report.trials])
    if flattered:
        lines += ["", "speculative decoding (acceptance in the benchmark against natural prompts):"]
        lines += [f"  warning: {w}" for w in flattered]

    failures = report.failures()
    if failures:
        lines += ["", "failures (one example per category):"]
        for category, group in failures.items():
            t = group[0]
            lines.append(
                f"  {category} x{len(group)}: {short_id(t.id, rid)}{_reused(t)} "
                f"{report.label(t.flags)}"
                f" (stage {t.stage})"
            )
            evidence = (t.evidence or [t.detail or ""])[0]
            if evidence:
                lines.append(f"      {evidence[:200]}")
            if t.remedy:
                lines.append(f"      remedy: {t.remedy}")

    if report.pruned:
        lines += ["", "pruned (not run):"]
        for p in report.pruned:
            by = f" by {short_id(p['by_trial'], rid)}" if p.get("by_trial") else ""
            lines.append(f"  {report.label(p['flags'])}{by}: {p['reason']}")

    notes = report.run.get("notes") or []
    if notes:
        lines += ["", "notes:", *(f"  {n}" for n in notes)]
    return "\n".join(lines) + "\n"
