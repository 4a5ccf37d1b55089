"""Checking configurations against a flag table: refusals, renames, fallbacks."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from bringup.engines.flagcheck import (
    args_to_config,
    captured_help,
    captured_table,
    check_config,
    check_env,
    engine_table,
)
from bringup.engines.helptext import ParseOptions


def test_valid_config_has_no_problems() -> None:
    table = captured_table("sglang")
    flags = {
        "--attention-backend": "flashinfer",
        "--kv-cache-dtype": "bf16",
        "--tp-size": 8,
        "--trust-remote-code": True,
        "--disable-radix-cache": False,
        "--mem-fraction-static": 0.85,
    }
    assert check_config(table, flags, "sglang") == []


def test_value_outside_choices_names_choices_and_version() -> None:
    table = captured_table("sglang")
    [problem] = check_config(table, {"--moe-runner-backend": "flashinfer_cutlas"}, "sglang")
    assert problem.flag == "--moe-runner-backend"
    assert "SGLang 0.5.23" in problem.message
    assert "flashinfer_cutlass" in problem.message and "deep_gemm" in problem.message
    assert problem.replacement == "--moe-runner-backend flashinfer_cutlass"


def test_renamed_sglang_flags_name_their_replacement() -> None:
    table = captured_table("sglang")
    problems = check_config(
        table,
        {"--mamba-scheduler-strategy": "extra_buffer", "--cuda-graph-max-bs": 256},
        "sglang",
    )
    by_flag = {p.flag: p for p in problems}
    mamba = by_flag["--mamba-scheduler-strategy"]
    assert mamba.replacement == "--mamba-radix-cache-strategy"
    assert "0.5.20" in mamba.message
    graphs = by_flag["--cuda-graph-max-bs"]
    assert graphs.replacement == "--cuda-graph-max-bs-decode"
    assert "ambiguous" in graphs.message and "--cuda-graph-max-bs-prefill" in graphs.message


def test_removed_value_names_replacement() -> None:
    table = captured_table("sglang")
    [problem] = check_config(table, {"--attention-backend": "cutlass_mla"}, "sglang")
    assert problem.replacement == "--attention-backend trtllm_mla"
    assert "32111" in problem.message


def test_llama_server_load_mode_renames() -> None:
    table = captured_table("llama.cpp")
    problems = check_config(table, {"--mlock": True, "--no-mmap": True}, "llama.cpp")
    assert {p.flag: p.replacement for p in problems} == {
        "--mlock": "--load-mode mmap+mlock",
        "--no-mmap": "--load-mode none",
    }
    assert all("b11434" in p.message for p in problems)


def test_switch_and_value_arity() -> None:
    table = captured_table("llama.cpp")
    [needs_value] = check_config(table, {"-fa": True}, "llama.cpp")
    assert "needs a value" in needs_value.message and "on, off, auto" in needs_value.message
    sg = captured_table("sglang")
    [no_value] = check_config(sg, {"--disable-radix-cache": "yes"}, "sglang")
    assert "switch" in no_value.message


def test_numeric_choices_and_comma_lists() -> None:
    table = captured_table("llama.cpp")
    assert (
        check_config(table, {"--cpu-strict": 1, "--spec-type": "ngram-cache,draft-mtp"}, "l") == []
    )
    [bad] = check_config(table, {"--spec-type": "ngram-cache,warp"}, "l")
    assert "warp" in bad.message


def test_unknown_flag_gets_closest_spelling() -> None:
    table = captured_table("sglang")
    [problem] = check_config(table, {"--mem-fraction-statik": 0.8}, "sglang")
    assert problem.replacement == "--mem-fraction-static"
    assert "did you mean" in problem.message


def test_vllm_dotted_and_underscored_flags_pass() -> None:
    table = captured_table("vllm", ParseOptions(normalize_underscores=True, dotted_keys=True))
    flags = {"--max_num_seqs": 64, "-cc.cudagraph_mode": "FULL", "--kv-cache-dtype": "fp8"}
    assert check_config(table, flags, "vllm") == []
    [bad] = check_config(table, {"--kv-cache-dtype": "fp8_e3m4"}, "vllm")
    assert "vLLM 0.33.0" in bad.message


def test_removed_env_vars() -> None:
    [problem] = check_env("vllm", {"VLLM_ATTENTION_BACKEND": "FLASHINFER", "HF_HOME": "/x"})
    assert problem.flag == "VLLM_ATTENTION_BACKEND"
    assert problem.replacement == "--attention-backend"


def test_args_to_config_reads_arity_from_table() -> None:
    table = captured_table("sglang")
    args = ["--tp-size", "8", "--trust-remote-code", "--cuda-graph-bs-decode", "1", "2", "4"]
    args += ["--mem-fraction-static=0.8", "--chunked-prefill-size", "-1"]
    assert args_to_config(table, args) == {
        "--tp-size": "8",
        "--trust-remote-code": True,
        "--cuda-graph-bs-decode": "1 2 4",
        "--mem-fraction-static": "0.8",
        "--chunked-prefill-size": "-1",
    }


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_installed_help_is_preferred_and_named(tmp_path: Path) -> None:
    help_copy = tmp_path / "help.txt"
    help_copy.write_text(captured_help("sglang"))
    exe = _script(tmp_path / "sglang", f"print(open({str(help_copy)!r}).read())")
    table = engine_table(
        "sglang", [str(exe), "serve", "--help"], version="0.5.23", markers=["--port"]
    )
    assert table.source.startswith("`") and str(exe) in table.source
    assert "because" not in table.source
    [problem] = check_config(table, {"--kv-cache-dtype": "fp9"}, "sglang")
    assert str(exe) in problem.message


def test_help_without_markers_falls_back_with_reason(tmp_path: Path) -> None:
    exe = _script(tmp_path / "fake-engine", "print('usage: fake [--world W]')")
    table = engine_table("vllm", [str(exe), "--help"], markers=["--port", "--max-num-seqs"])
    assert "vllm-0.33.0-serve-help-all.txt" in table.source
    assert "because" in table.source and "--port" in table.source
    assert table.lookup("--max-num-seqs").spec is not None


def test_missing_executable_falls_back(tmp_path: Path) -> None:
    table = engine_table("sglang", [str(tmp_path / "absent"), "--help"])
    assert "failed" in table.source
    assert table.version == "0.5.23"


def test_llama_server_adapter_checks_flags_before_launch(tmp_path: Path) -> None:
    from bringup.engines.llamacpp import LlamaCppAdapter, find_llama_server
    from bringup.spec import parse_spec

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    spec = parse_spec(
        f'[engine]\nname = "llama.cpp"\n[model]\npath = "{model}"\n'
        '[launch]\nargs = ["-c", "512", "--no-mmap"]\n'
    )
    problems = LlamaCppAdapter().check_flags(spec, {"-fa": "on", "-ctk": "q3_K", "--mlock": True})
    by_flag = {p.flag: p for p in problems}
    assert set(by_flag) == {"--no-mmap", "-ctk", "--mlock"}
    assert by_flag["--mlock"].replacement == "--load-mode mmap+mlock"
    assert "q8_0" in by_flag["-ctk"].message
    binary = find_llama_server()
    if binary is None:
        assert "llama-server is not installed here" in by_flag["-ctk"].message
    else:
        assert f"{binary} --help" in by_flag["-ctk"].message
