"""The correctness gate and the probe against the real llama-server and Gemma 3 270M."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bringup.checks import detect_garbage, run_correctness
from bringup.checks.probe import run_probe
from bringup.http import OpenAIClient
from bringup.spec import Spec, parse_spec
from bringup.testing.llama import serve_llama

pytestmark = pytest.mark.integration


def gemma_spec(model: str) -> Spec:
    return parse_spec(f'[engine]\nname = "llama.cpp"\n[model]\npath = "{model}"\n')


@pytest.mark.parametrize("kv", ["f16", "q8_0"])
async def test_builtin_known_answers_pass_on_gemma(
    llama_server: str, gemma_path: str, tmp_path: Path, kv: str
) -> None:
    flags = ("--cache-type-k", kv)
    async with (
        serve_llama(llama_server, gemma_path, tmp_path, *flags) as url,
        OpenAIClient(url, timeout_s=120) as c,  # answers are checked, not speed
    ):
        report = await run_correctness(c, gemma_spec(gemma_path))
    for r in report.results:
        print(f"{kv} {r.name:16s} {'PASS' if r.passed else 'FAIL'} {r.output!r} ({r.expectation})")
    assert report.passed, report.evidence
    assert all(r.output for r in report.results)


async def test_detectors_quiet_on_long_greedy_gemma_output(
    llama_server: str, gemma_path: str, tmp_path: Path
) -> None:
    # the detectors are checked, not speed: beside two CPU hogs these 96 tokens took over 30 s
    async with (
        serve_llama(llama_server, gemma_path, tmp_path) as url,
        OpenAIClient(url, timeout_s=120) as c,
    ):
        out = await c.complete("The history of the printing press", max_tokens=96, logprobs=1)
    assert len(out.tokens) > 40
    assert detect_garbage(out.text, out.tokens) is None, out.text


async def test_probe_real_server_and_cli(
    llama_server: str, gemma_path: str, tmp_path: Path
) -> None:
    async with serve_llama(llama_server, gemma_path, tmp_path) as url:
        # this checks the answer, not the speed: beside other load llama-server's threads
        # are descheduled and one short request took 0.25 s and the next 5+ s (two hogs)
        res = await run_probe(url, timeout_s=120)
        print(f"probe: {res.verdict} ({res.elapsed_s:.3f}s)")
        assert res.passed and res.health_status == 200 and "Paris" in (res.output or "")
        limit = max(120.0, 10 * res.elapsed_s)
        start = time.perf_counter()
        cmd = [
            sys.executable,
            "-c",
            "from bringup.cli.probe_cmd import probe; probe()",
            url,
            "--timeout",
            f"{limit:.1f}",
        ]
        done = await asyncio.to_thread(
            subprocess.run, cmd, capture_output=True, text=True, timeout=30 + 2 * limit
        )
        wall = time.perf_counter() - start
        print(f"bringup probe exit {done.returncode} in {wall:.2f}s: {done.stdout.strip()}")
        assert done.returncode == 0 and done.stdout.startswith("ok:")
    gone = await asyncio.to_thread(
        subprocess.run, cmd, capture_output=True, text=True, timeout=30 + 2 * limit
    )
    assert gone.returncode == 1 and gone.stdout.startswith("fail:")
