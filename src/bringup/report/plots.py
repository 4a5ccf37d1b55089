"""Plots for the HTML report, rendered by matplotlib as inline SVG.

``throughput_svg`` draws output tokens/s against concurrency, one line per passing
configuration; ``latency_svg`` draws TTFT, ITL and E2E p50/p99 bars per passing
configuration at the headline level. Each returns the ``<svg>`` element as text (text
kept as text, so the page stays searchable), or None when there is nothing to draw.
matplotlib escapes every label it writes; labels are short trial ids, not free text.
"""

from __future__ import annotations

import io
from typing import Any

from bringup.report.model import RunReport, levels
from bringup.report.text import short_id

MAX_LINES = 8
PALETTE = ("#1b7837", "#2166ac", "#b2182b", "#762a83", "#e08214", "#35978f", "#8c510a", "#4d4d4d")


def _figure(width: float, height: float) -> Any:
    import matplotlib

    matplotlib.rcParams["svg.fonttype"] = "none"  # text as <text>, not paths
    matplotlib.rcParams["svg.hashsalt"] = "bringup"  # stable element ids
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    # no metadata block: no date (stable output) and no RDF namespaces in the page
    fig.savefig(
        buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None}
    )
    text = buf.getvalue()
    return text[text.index("<svg") :]


def throughput_svg(report: RunReport) -> str | None:
    lines = []
    for t in report.passed()[:MAX_LINES]:
        per = {c: m["output_tok_s"] for c, m in levels(t).items() if "output_tok_s" in m}
        if per:
            lines.append((short_id(t.id, report.run_id), per))
    if not lines:
        return None
    fig = _figure(6.4, 3.6)
    ax = fig.add_subplot()
    for i, (label, per) in enumerate(lines):
        xs = sorted(per)
        ax.plot(xs, [per[x] for x in xs], marker="o", color=PALETTE[i % len(PALETTE)], label=label)
    conc = sorted({c for _, per in lines for c in per})
    ax.set_xscale("log", base=2)
    ax.set_xticks(conc, [str(c) for c in conc])
    ax.minorticks_off()
    ax.set_xlabel("concurrent requests")
    ax.set_ylabel("output tokens/s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(title="trial", fontsize=8, title_fontsize=8)
    return _svg(fig)


def latency_svg(report: RunReport) -> str | None:
    trials = [t for t in report.passed()[:MAX_LINES] if "ttft_p50_ms" in t.metrics]
    if not trials:
        return None
    groups = (("TTFT", "ttft"), ("ITL", "itl"), ("E2E", "e2e"))
    fig = _figure(7.2, 0.5 + 0.45 * len(trials) + 0.8)
    axes = fig.subplots(1, len(groups), sharey=True)
    labels = [short_id(t.id, report.run_id) for t in trials]
    ys = list(range(len(trials)))
    for ax, (title, base) in zip(axes, groups, strict=True):
        for j, (q, color) in enumerate((("p50", "#4393c3"), ("p99", "#d6604d"))):
            vals = [float(t.metrics.get(f"{base}_{q}_ms") or 0.0) for t in trials]
            ax.barh([y + (j - 0.5) * 0.38 for y in ys], vals, height=0.36, color=color, label=q)
        ax.set_title(f"{title} ms", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys, labels)
    axes[0].invert_yaxis()  # best configuration on top (axes share y)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside upper right", fontsize=8, ncols=2)
    return _svg(fig)
