"""Read a torch-profiler trace (Chrome trace JSON, optionally gzipped) into a step summary.

What is measured, per decode step (an engine iteration that prefills nothing):

- **step wall time**: from the step's own annotation to the next one's start, so it covers
  scheduling, input preparation and sampling on the host as well as the forward pass;
- **kernel time**: the summed device time of the kernels that the step launched (a kernel
  belongs to the step whose host window holds the runtime call, ``cudaLaunchKernel`` or
  ``cudaGraphLaunch``, that launched it; matched by correlation id);
- **GPU busy** = kernel time / step wall time (a mostly idle GPU means the host, the
  launches or the scheduler bound the step, whatever its top kernel is);
- the **top kernels** and **top ops** by share of the decode steps' kernel time. A
  kernel's op is the innermost ``aten::`` (or other CPU) op whose span holds its launch on
  the same thread; a launch outside any op (CUDA graph replay) is ``(cuda graph)``.

The step annotation is engine-specific (``step_pattern``, with groups ``ctx`` and ``gen``:
the requests prefilling and decoding in that step); each engine's folder names its own
(its ``ProfilingEndpoints.step_pattern``). Given none, the first registered engine's
pattern that matches one of the trace's annotations is used. Without any step annotation
the whole trace counts as one step. Hand-written because torch's own reader
(``torch.profiler`` / HTA) needs torch or pandas, which bringup does not depend on.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_LAUNCH = re.compile(r"cuda(?:Launch|GraphLaunch|LaunchKernelExC|MemcpyAsync|MemsetAsync)|cuLaunch")
_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
GRAPH_OP = "(cuda graph)"
NO_OP = "(no op)"


@dataclass
class Share:
    name: str
    time_us: float
    share: float  # of the decode steps' kernel time
    count: int


@dataclass
class TraceSummary:
    source: str
    decode_steps: int
    other_steps: int
    batch: float  # mean requests per decode step
    step_wall_us: float  # mean
    kernel_us: float  # mean per decode step
    gpu_busy: float
    top_kernels: list[Share] = field(default_factory=list)
    top_ops: list[Share] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TraceSummary:
        kernels = [Share(**k) for k in data.get("top_kernels", [])]
        ops = [Share(**o) for o in data.get("top_ops", [])]
        rest = {k: v for k, v in data.items() if k not in ("top_kernels", "top_ops")}
        return cls(**rest, top_kernels=kernels, top_ops=ops)


def load_events(path: str | Path) -> list[dict[str, Any]]:
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data = json.loads(raw)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]


@dataclass
class _Step:
    start: float
    end: float
    decode: bool
    batch: int
    kernel_us: float = 0.0


def _steps(events: list[dict[str, Any]], pattern: str) -> list[_Step]:
    rx = re.compile(pattern)
    marks = []
    for e in events:
        if e.get("cat") != "user_annotation":
            continue
        m = rx.search(str(e.get("name", "")))
        if m:
            marks.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), m))
    marks.sort(key=lambda t: t[0])
    steps = []
    for i, (ts, end, m) in enumerate(marks):
        nxt = marks[i + 1][0] if i + 1 < len(marks) else end
        groups = m.groupdict()
        decode = int(groups.get("ctx") or 0) == 0
        steps.append(_Step(ts, max(nxt, end), decode, int(groups.get("gen") or 0)))
    return steps


def _ops_by_thread(events: list[dict[str, Any]]) -> dict[Any, list[tuple[float, float, str]]]:
    ops: dict[Any, list[tuple[float, float, str]]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op":
            ts = float(e["ts"])
            ops[(e.get("pid"), e.get("tid"))].append((ts, ts + float(e.get("dur", 0)), e["name"]))
    for spans in ops.values():
        spans.sort()
    return ops


def _innermost(spans: list[tuple[float, float, str]], ts: float) -> str | None:
    """The innermost span holding ``ts`` (spans sorted by start; nested ones start later)."""
    i = bisect.bisect_right(spans, (ts, float("inf"), "")) - 1
    best = None
    while i >= 0:
        start, end, name = spans[i]
        if end >= ts and (best is None or start >= best[0]):
            best = (start, name)
            break  # the latest-starting span that still holds ts is the innermost
        i -= 1
    return best[1] if best else None


def known_step_patterns() -> list[str]:
    """The step annotations of the registered engines that have one."""
    from bringup.engines.registry import adapters  # the registry loads every engine

    found = (a.profiling(".") for a in adapters())
    return [e.step_pattern for e in found if e is not None and e.step_pattern]


def _pattern_for(events: list[dict[str, Any]]) -> str | None:
    names = [str(e.get("name", "")) for e in events if e.get("cat") == "user_annotation"]
    for pattern in known_step_patterns():
        rx = re.compile(pattern)
        if any(rx.search(n) for n in names):
            return pattern
    return None


def summarize(path: str | Path, step_pattern: str | None = None, top: int = 10) -> TraceSummary:
    events = load_events(path)
    pattern = step_pattern or _pattern_for(events)
    steps = _steps(events, pattern) if pattern else []
    starts = [s.start for s in steps]
    ops = _ops_by_thread(events)
    launches: dict[Any, tuple[float, str]] = {}
    for e in events:
        if e.get("cat") == "cuda_runtime" and _LAUNCH.search(str(e.get("name", ""))):
            corr = (e.get("args") or {}).get("correlation")
            if corr is None:
                continue
            ts = float(e["ts"])
            op = _innermost(ops.get((e.get("pid"), e.get("tid")), []), ts)
            if op is None:
                op = GRAPH_OP if "Graph" in str(e["name"]) else NO_OP
            launches[corr] = (ts, op)
    kernels: dict[str, list[float]] = defaultdict(list)
    by_op: dict[str, list[float]] = defaultdict(list)
    for e in events:
        if e.get("cat") not in _GPU_CATS:
            continue
        corr = (e.get("args") or {}).get("correlation")
        launch = launches.get(corr)
        if launch is None:
            continue
        ts, op = launch
        if steps:
            i = bisect.bisect_right(starts, ts) - 1
            if i < 0 or ts > steps[i].end or not steps[i].decode:
                continue
            steps[i].kernel_us += float(e.get("dur", 0))
        dur = float(e.get("dur", 0))
        kernels[str(e["name"])].append(dur)
        by_op[op].append(dur)
    decode = [s for s in steps if s.decode]
    if not steps:  # no annotation: the traced span is one step
        ts_all = [float(e["ts"]) for e in events]
        ends = [float(e["ts"]) + float(e.get("dur", 0)) for e in events]
        total = sum(sum(v) for v in kernels.values())
        decode = [_Step(min(ts_all, default=0), max(ends, default=0), True, 0, total)]
    total_kernel = sum(s.kernel_us for s in decode)
    total_wall = sum(s.end - s.start for s in decode)
    n = max(len(decode), 1)
    return TraceSummary(
        source=Path(path).name,
        decode_steps=len(decode),
        other_steps=len(steps) - len(decode) if steps else 0,
        batch=round(sum(s.batch for s in decode) / n, 2),
        step_wall_us=round(total_wall / n, 1),
        kernel_us=round(total_kernel / n, 1),
        gpu_busy=round(total_kernel / total_wall, 4) if total_wall > 0 else 0.0,
        top_kernels=_top(kernels, total_kernel, top),
        top_ops=_top(by_op, total_kernel, top),
    )


def _top(times: dict[str, list[float]], total: float, top: int) -> list[Share]:
    rows = sorted(times.items(), key=lambda kv: -sum(kv[1]))[:top]
    return [
        Share(name, round(sum(d), 1), round(sum(d) / total, 4) if total else 0.0, len(d))
        for name, d in rows
    ]
