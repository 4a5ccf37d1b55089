"""The help-text parser against the real help of SGLang 0.5.23, vLLM 0.33.0 and llama-server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bringup.engines.flagcheck import captured_help, captured_table
from bringup.engines.helptext import ParseOptions, detect_style, parse_help, split_invocation

ENGINES_DIR = Path(__file__).resolve().parents[2] / "src" / "bringup" / "engines"


def _option_lines(text: str, pattern: str) -> int:
    return sum(1 for line in text.splitlines() if re.match(pattern, line))


@pytest.mark.parametrize(
    ("engine", "pattern"),
    [("sglang", r"^  -"), ("vllm", r"^  -"), ("llama.cpp", r"^-{1,2}[A-Za-z0-9]")],
)
def test_every_option_line_becomes_one_flag(engine: str, pattern: str) -> None:
    text = captured_help(engine)
    table = captured_table(engine)
    assert len(table.flags) == _option_lines(text, pattern)


def test_shipped_help_is_the_shared_capture() -> None:
    for folder, name in (
        ("sglang", "sglang-0.5.23-serve-help.txt"),
        ("vllm", "vllm-0.33.0-serve-help-all.txt"),
        ("llamacpp", "llama-server-b11434-cuda-help.txt"),
    ):
        shared = Path("/work/shared/engines") / name
        if shared.exists():
            assert (ENGINES_DIR / folder / "help" / name).read_bytes() == shared.read_bytes()


def test_detect_style() -> None:
    assert detect_style(captured_help("sglang")) == "argparse"
    assert detect_style(captured_help("vllm")) == "argparse"
    assert detect_style(captured_help("llama.cpp")) == "llama"
    assert detect_style(captured_help("trtllm")) == "click"


def test_split_invocation_layouts() -> None:
    parts, help_text = split_invocation("  --tp-size TP_SIZE, --tensor-parallel-size TP_SIZE")
    assert parts == [("--tp-size", "TP_SIZE"), ("--tensor-parallel-size", "TP_SIZE")]
    assert help_text == ""
    parts, help_text = split_invocation("-fa,   --flash-attn [on|off|auto]       set Flash")
    assert parts == [("-fa", ""), ("--flash-attn", "[on|off|auto]")]
    assert help_text == "set Flash"
    parts, _ = split_invocation("  --config-format ['auto', 'hf', 'mistral']")
    assert parts == [("--config-format", "['auto', 'hf', 'mistral']")]
    parts, help_text = split_invocation("  --trust-remote-code   Whether or not")
    assert parts == [("--trust-remote-code", "")] and help_text == "Whether or not"


def test_sglang_choices_aliases_and_arity() -> None:
    table = captured_table("sglang")
    attn = table.lookup("--attention-backend").spec
    assert attn is not None and attn.choices is not None
    assert {"fa3", "flashinfer", "trtllm_mla", "cutedsl_mla", "triton"} <= set(attn.choices)
    assert "cutlass_mla" not in attn.choices
    tp = table.lookup("--tensor-parallel-size").spec
    assert tp is not None and tp.canonical == "--tp-size" and tp.takes_value
    ep = table.lookup("--ep").spec
    assert ep is not None and ep.canonical == "--ep-size"
    bs = table.lookup("--cuda-graph-bs-decode").spec
    assert bs is not None and bs.multiple
    tf32 = table.lookup("--no-enable-tf32-matmul").spec
    assert tf32 is not None and not tf32.takes_value
    kv = table.lookup("--kv-cache-dtype").spec
    assert kv is not None and kv.choices == (
        "auto",
        "fp8_e5m2",
        "fp8_e4m3",
        "mxfp8",
        "bf16",
        "bfloat16",
        "nvfp4",
        "fp4_mx_block16",
    )


def test_argparse_prefix_matching() -> None:
    table = captured_table("sglang")
    assert table.allow_abbrev
    tp = table.lookup("--tp")
    assert tp.spec is not None and tp.abbreviated and tp.spec.canonical == "--tp-size"
    amb = table.lookup("--cuda-graph-max-bs")
    assert amb.spec is None
    assert amb.ambiguous == ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill")
    assert table.lookup("--no-such-flag-at-all").spec is None


def test_vllm_list_choices_underscores_and_dotted_keys() -> None:
    table = captured_table("vllm", ParseOptions(normalize_underscores=True, dotted_keys=True))
    assert table.version == "0.33.0"
    kv = table.lookup("--kv-cache-dtype").spec
    assert kv is not None and kv.choices is not None and "fp8_e5m2" in kv.choices
    assert table.lookup("--max_num_seqs").spec is table.lookup("--max-num-seqs").spec
    cc = table.lookup("-cc.cudagraph_mode")
    assert cc.spec is not None and cc.spec.canonical == "--compilation-config"
    assert cc.subkey == "cudagraph_mode"
    ep = table.lookup("-ep").spec
    assert ep is not None and not ep.takes_value and "--disable-expert-parallel" in ep.names


def test_llama_server_layouts() -> None:
    table = captured_table("llama.cpp")
    fa = table.lookup("-fa").spec
    assert fa is not None and fa.choices == ("on", "off", "auto") and fa.takes_value
    ctk = table.lookup("--cache-type-k").spec
    assert ctk is not None and ctk.choices is not None and "q8_0" in ctk.choices
    assert ctk.env == "LLAMA_ARG_CACHE_TYPE_K"
    lm = table.lookup("--load-mode").spec
    assert lm is not None and lm.choices == ("auto", "none", "mmap", "mlock", "mmap+mlock", "dio")
    ngl = table.lookup("-ngl").spec
    assert ngl is not None and ngl.choices is None  # "N" accepts numbers, auto, all
    fmt = table.lookup("--reasoning-format").spec
    assert fmt is not None and fmt.choices is not None and "auto" in fmt.choices
    spec_type = table.lookup("--spec-type").spec
    assert spec_type is not None and spec_type.multiple and "ngram-cache" in spec_type.choices
    cb = table.lookup("-nocb").spec
    assert cb is not None and cb.canonical == "--cont-batching" and not cb.takes_value
    assert not table.allow_abbrev
    assert table.lookup("--flash").spec is None


def test_click_layout() -> None:
    text = (
        "Usage: srv serve [OPTIONS] MODEL\n\nOptions:\n"
        "  --backend [pytorch|tensorrt]    The backend.\n"
        "  --tp_size, --tensor_parallel_size INTEGER\n"
        "                                  Tensor parallel size.\n"
        "  --trust_remote_code             Flag.\n"
        "  --enable-x / --disable-x        Toggle.\n"
    )
    table = parse_help(text, "srv", "1.0", "test")
    assert table.style == "click" and not table.allow_abbrev
    backend = table.lookup("--backend").spec
    assert backend is not None and backend.choices == ("pytorch", "tensorrt")
    tp = table.lookup("--tensor_parallel_size").spec
    assert tp is not None and tp.names == ("--tp_size", "--tensor_parallel_size")
    assert tp.metavar == "INTEGER"
    toggle = table.lookup("--disable-x").spec
    assert toggle is not None and not toggle.takes_value


def test_argparse_optional_and_star_nargs() -> None:
    text = (
        "usage: x [-h]\n\noptions:\n"
        "  --mode [{a,b}]        optional value\n"
        "  --paths [PATHS ...]   zero or more\n"
        "  --sizes SIZES [SIZES ...]\n"
        "                        one or more\n"
    )
    table = parse_help(text, "x", "1", "test")
    mode = table.lookup("--mode").spec
    assert mode is not None and mode.optional_value and mode.choices == ("a", "b")
    paths = table.lookup("--paths").spec
    assert paths is not None and paths.multiple and not paths.optional_value
    sizes = table.lookup("--sizes").spec
    assert sizes is not None and sizes.multiple


def test_trtllm_help_from_source_is_labelled() -> None:
    table = captured_table("trtllm")
    assert "00209af" in table.version
    assert "shipped with bringup" in table.source
    backend = table.lookup("--backend").spec
    assert backend is not None and backend.choices == ("pytorch", "tensorrt", "_autodeploy")
    assert table.lookup("--tp_size").spec is table.lookup("--tensor_parallel_size").spec
    assert "Not captured output" in captured_help("trtllm")
