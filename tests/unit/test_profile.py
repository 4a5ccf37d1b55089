"""bringup profile: trace summaries, the bottleneck against the reference, llama-bench."""

from __future__ import annotations

import gzip
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.engines.llamacpp.profiling import BenchTg, DecodeGap, bench_argv, parse_bench
from bringup.engines.registry import get_engine
from bringup.errors import BringupError, SpecError
from bringup.profile.trace import GRAPH_OP, summarize
from bringup.profile.verdict import bottleneck, family
from bringup.spec import Spec, parse_spec


class _Trace:
    """A small Chrome trace in torch-profiler's shape: annotations, ops, launches, kernels."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.corr = 0

    def step(
        self,
        t0: float,
        ctx: int,
        gen: int,
        kernels: list[tuple[str, str, float]],
        period: float = 1000.0,
        graph: bool = False,
    ) -> None:
        name = f"execute_context_{ctx}({ctx * 100})_generation_{gen}({gen})"
        self.events.append(_x("user_annotation", name, t0, period * 0.9))
        t = t0 + 10
        for op, kernel, dur in kernels:
            self.corr += 1
            if not graph:
                self.events.append(_x("cpu_op", "aten::linear", t, 60))  # an outer op
                self.events.append(_x("cpu_op", op, t + 5, 40))
            launch = "cudaGraphLaunch" if graph else "cudaLaunchKernel"
            self.events.append(_x("cuda_runtime", launch, t + 10, 5, corr=self.corr))
            self.events.append(_x("kernel", kernel, t + 200, dur, corr=self.corr, tid=7))
            t += 70

    def write(self, path: Path) -> Path:
        path.write_bytes(gzip.compress(json.dumps({"traceEvents": self.events}).encode()))
        return path


def _x(cat: str, name: str, ts: float, dur: float, corr: int | None = None, tid: int = 1):
    e: dict[str, Any] = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "ts": ts,
        "dur": dur,
        "pid": 1,
        "tid": tid,
    }
    if corr is not None:
        e["args"] = {"correlation": corr}
    return e


def _decode(path: Path, kernels: list[tuple[str, str, float]], steps: int = 4, **kw: Any) -> Path:
    tr = _Trace()
    tr.step(0, 2, 6, [("aten::mm", "prefill_gemm", 5000.0)], period=8000)  # a prefill step
    for i in range(steps):
        tr.step(8000 + i * 1000, 0, 8, kernels, **kw)
    return tr.write(path)


def test_summary_counts_decode_steps_only_and_gpu_busy(tmp_path: Path) -> None:
    path = _decode(
        tmp_path / "a.pt.trace.json.gz",
        [("aten::mm", "sm90_gemm", 300), ("aten::copy_", "copy_kernel", 100)],
    )
    s = summarize(path)
    assert (s.decode_steps, s.other_steps, s.batch) == (4, 1, 8)
    assert s.kernel_us == 400  # the prefill's 5000 us kernel is not a decode step's
    assert s.gpu_busy == pytest.approx(400 / s.step_wall_us, rel=1e-3)
    assert [k.name for k in s.top_kernels] == ["sm90_gemm", "copy_kernel"]
    assert s.top_kernels[0].share == 0.75
    # the op is the innermost one holding the launch, not the enclosing aten::linear
    assert [o.name for o in s.top_ops] == ["aten::mm", "aten::copy_"]


def test_graph_replay_has_no_op(tmp_path: Path) -> None:
    path = _decode(tmp_path / "g.json.gz", [("", "sm90_gemm", 300)], graph=True)
    assert summarize(path).top_ops[0].name == GRAPH_OP


def test_host_bound_step_names_cuda_graphs(tmp_path: Path) -> None:
    s = summarize(_decode(tmp_path / "h.gz", [("aten::mm", "sm90_gemm", 100)]))
    neck = bottleneck(s, None, eager=True)
    assert neck.kind == "host" and "--enforce-eager" in neck.flag


def test_fp8_cast_share_over_the_reference_is_named(tmp_path: Path) -> None:
    busy = [("aten::mm", "sm90_gemm", 300.0)]
    ref = summarize(_decode(tmp_path / "r.gz", busy * 2 + [("aten::copy_", "copy_k", 60.0)]))
    fp8 = summarize(_decode(tmp_path / "f.gz", busy * 2 + [("aten::copy_", "copy_k", 600.0)]))
    neck = bottleneck(fp8, ref)
    assert neck.kind == "kv-cast" and "--kv-cache-dtype auto" in neck.flag
    # the same profile against itself has no excess to name
    assert bottleneck(ref, ref).kind == "none"


def test_families() -> None:
    assert family("aten::copy_") == "kv-cast"
    assert family("flash_fwd_splitkv_kernel") == "attention"
    assert family("nvjet_tst_128x64") == "gemm"
    assert family("something_else") == "other"


def test_llama_bench_tg_and_gap() -> None:
    out = json.dumps(
        [
            {"n_prompt": 512, "n_gen": 0, "avg_ts": 9000.0},
            {"n_prompt": 0, "n_gen": 64, "avg_ts": 200.0, "stddev_ts": 2.0},
        ]
    )
    tg = parse_bench(out)
    assert (tg.n_gen, tg.tok_s) == (64, 200.0)
    gap = DecodeGap(108.0, tg)
    assert gap.ratio == pytest.approx(0.54) and "server's per-token cost" in gap.explain()
    # faster than the bare kernels: not a gap but two measurements under different load
    assert "different conditions" in DecodeGap(10.3, BenchTg(64, 5.1, 2.6)).explain()
    with pytest.raises(ValueError):
        parse_bench(json.dumps([{"n_prompt": 512, "n_gen": 0, "avg_ts": 1.0}]))
    argv = bench_argv("llama-bench", "m.gguf", {"-ngl": 99, "-fa": "on", "--parallel": 8})
    assert argv[-4:] == ["-ngl", "99", "-fa", "on"]


def test_cli_trace_json_and_user_mistake(tmp_path: Path) -> None:
    path = _decode(tmp_path / "c.gz", [("aten::mm", "sm90_gemm", 900)])
    out = tmp_path / "p.json"
    res = CliRunner().invoke(cli, ["profile", "--trace", str(path), "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "bottleneck:" in res.output
    assert json.loads(out.read_text())["summary"]["decode_steps"] == 4
    res = CliRunner().invoke(cli, ["profile"])
    assert res.exit_code == 2 and "TRIAL" in res.output


def test_step_pattern_is_the_engines_own(tmp_path: Path) -> None:
    path = _decode(tmp_path / "s.gz", [("aten::mm", "sm90_gemm", 900)])
    endpoints = get_engine("vllm").profiling(str(tmp_path))
    assert endpoints is not None and endpoints.step_pattern
    found = summarize(path)  # no pattern given: the registered engine's that matches
    assert found == summarize(path, step_pattern=endpoints.step_pattern)
    assert (found.decode_steps, found.other_steps) == (4, 1)
    # a pattern no annotation matches: the whole trace is one step, prefill included
    assert summarize(path, step_pattern=r"no_such_step_(?P<gen>\d+)").decode_steps == 1


def _llama_spec(binary: Path) -> Spec:
    text = f'[engine]\nname = "llama.cpp"\nbinary = "{binary}"\n[model]\npath = "m.gguf"\n'
    return parse_spec(text)


def test_engine_without_endpoints_compares_decode_through_its_adapter(tmp_path: Path) -> None:
    server = tmp_path / "llama-server"
    server.write_text("")
    adapter = get_engine("llama.cpp")
    with pytest.raises(BringupError, match="llama-bench"):
        adapter.compare_decode(_llama_spec(server), {}, {"decode_tok_s_single": 100.0})
    rows = [{"n_prompt": 0, "n_gen": 64, "avg_ts": 200.0, "stddev_ts": 2.0}]
    bench = tmp_path / "llama-bench"
    bench.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(rows))})\n")
    bench.chmod(bench.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(SpecError, match="single-stream"):
        adapter.compare_decode(_llama_spec(server), {}, {})
    got = adapter.compare_decode(_llama_spec(server), {"-ngl": 99}, {"decode_tok_s_single": 108})
    assert got is not None and got.record["ratio"] == pytest.approx(0.54)
    assert got.record["bench_tok_s"] == 200.0 and "server's per-token cost" in got.text
    assert get_engine("vllm").compare_decode(_llama_spec(server), {}, {}) is None
