"""The help parser against the real vLLM CLI, when a vLLM install is present.

vLLM installs and prints its help on a CPU machine. The test looks for it in
``$BRINGUP_VLLM_VENV`` (default ``~/.cache/bringup/vllm-venv``), made with
``python3.11 -m venv ~/.cache/bringup/vllm-venv && ~/.cache/bringup/vllm-venv/bin/pip install
vllm==0.33.0``, and skips when it is absent.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bringup.engines.flagcheck import captured_table
from bringup.engines.helptext import FlagTable, parse_help
from bringup.engines.vllm import VLLMAdapter
from bringup.spec import parse_spec

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VENV = Path(os.environ.get("BRINGUP_VLLM_VENV", "~/.cache/bringup/vllm-venv")).expanduser()
VLLM = VENV / "bin" / "vllm"
CPU_ENV = {**os.environ, "VLLM_TARGET_DEVICE": "cpu"}


@pytest.fixture(scope="module")
def installed_version() -> str:
    if not VLLM.is_file():
        pytest.skip(f"vLLM is not installed at {VLLM} (see this module's docstring)")
    out = subprocess.run(
        [
            str(VENV / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('vllm'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip()


@pytest.fixture(scope="module")
def real_table(installed_version: str) -> FlagTable:
    proc = subprocess.run(
        [str(VLLM), "serve", "--help=all"],
        capture_output=True,
        text=True,
        timeout=600,
        env=CPU_ENV,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return parse_help(
        proc.stdout,
        engine="vLLM",
        version=installed_version,
        source="test",
        options=VLLMAdapter.parse_options,
    )


def test_real_help_parses(real_table: FlagTable) -> None:
    assert len(real_table.flags) > 250
    for flag in ("--port", "--max-num-seqs", "--gpu-memory-utilization", "--kv-cache-dtype"):
        assert real_table.lookup(flag).spec is not None, flag
    kv = real_table.lookup("--kv-cache-dtype").spec
    assert kv is not None and kv.choices and "fp8" in kv.choices
    tp = real_table.lookup("-tp").spec
    assert tp is not None and tp.canonical == "--tensor-parallel-size"


def test_real_help_matches_captured(real_table: FlagTable, installed_version: str) -> None:
    if installed_version not in ("0.26.0", "0.33.0"):
        pytest.skip(f"installed vLLM is {installed_version}; the captures are of 0.26.0, 0.33.0")
    captured = captured_table("vllm", VLLMAdapter.parse_options, installed_version)
    assert captured.version == installed_version
    assert set(real_table.names()) == set(captured.names())
    names = ("--kv-cache-dtype", "--dtype", "--attention-backend")
    if installed_version == "0.33.0":
        names += ("--moe-backend", "--performance-mode")
    for name in names:
        real, cap = real_table.lookup(name).spec, captured.lookup(name).spec
        assert real is not None and cap is not None
        assert real.choices == cap.choices, name


def test_adapter_reads_the_installed_cli(real_table: FlagTable) -> None:
    spec = parse_spec(
        f'[engine]\nname = "vllm"\nbinary = "{VLLM}"\nenv = {{ VLLM_TARGET_DEVICE = "cpu" }}\n'
        '[model]\npath = "Qwen/Qwen3-0.6B"'
    )
    adapter = VLLMAdapter()
    assert adapter.check_flags(spec, {"--max-num-seqs": 8, "--kv-cache-dtype": "fp8"}) == []
    [problem] = adapter.check_flags(spec, {"--kv-cache-dtype": "fp9"})
    assert f"{VLLM} serve --help=all" in problem.message
    info = adapter.info(spec)
    assert info.version == real_table.version


PARSE_PROBE = """
import json, sys
from vllm.entrypoints.common.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
verdicts = {}
for flag in json.loads(sys.argv[1]):
    try:
        parser.parse_args([flag, "4"])
        verdicts[flag] = "ok"
    except SystemExit:
        verdicts[flag] = "refused"
print("VERDICTS " + json.dumps(verdicts))
"""


def test_prefix_and_spelling_semantics_match_the_real_parser(real_table: FlagTable) -> None:
    import json

    flags = ["--max-num-se", "--max_model_len", "--enable", "--bogus-flag", "--max-num-seqs"]
    proc = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", PARSE_PROBE, json.dumps(flags)],
        capture_output=True,
        text=True,
        timeout=600,
        env=CPU_ENV,
        check=True,
    )
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("VERDICTS "))
    real = json.loads(line.removeprefix("VERDICTS "))
    ours = {f: "ok" if real_table.lookup(f).spec is not None else "refused" for f in flags}
    assert real == ours
    assert real["--max-num-se"] == "ok" and real["--enable"] == "refused"
