from __future__ import annotations

from pathlib import Path

import pytest

from bringup.errors import SpecError
from bringup.spec import load_spec, parse_set, parse_spec

GOOD = """
[engine]
name = "llama.cpp"
[model]
path = "m.gguf"
[space]
"--flash-attn" = ["on", "off"]
"--parallel" = [1, 4]
[reference]
"--flash-attn" = "off"
"""


def test_grid_and_reference() -> None:
    spec = parse_spec(GOOD)
    assert spec.configs() == [
        {"--flash-attn": "on", "--parallel": 1},
        {"--flash-attn": "on", "--parallel": 4},
        {"--flash-attn": "off", "--parallel": 1},
        {"--flash-attn": "off", "--parallel": 4},
    ]
    assert spec.reference_config() == {"--flash-attn": "off", "--parallel": 1}
    assert spec.launch.host == "127.0.0.1"


def test_bad_field_names_file_line_and_field() -> None:
    text = GOOD.replace("[space]", '[bench]\nconcurrency = "lots"\n[space]')
    with pytest.raises(SpecError) as err:
        parse_spec(text, source="s.toml")
    msg = str(err.value)
    assert msg.startswith("s.toml:7:")
    assert "bench.concurrency" in msg


def test_unknown_field_is_refused() -> None:
    with pytest.raises(SpecError, match=r"launch\.portt"):
        parse_spec(GOOD + "\n[launch]\nportt = 8080\n", source="s.toml")


def test_toml_syntax_error_names_file() -> None:
    with pytest.raises(SpecError, match=r"^x\.toml: not valid TOML .*line 2"):
        parse_spec("[engine]\nname = \n", source="x.toml")


def test_space_key_must_be_a_flag() -> None:
    with pytest.raises(SpecError, match="must be an engine flag"):
        parse_spec(GOOD.replace('"--parallel"', '"parallel"'))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "nope.toml")


def test_relative_model_path_resolves_next_to_spec(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"x")
    (tmp_path / "s.toml").write_text(GOOD)
    spec = load_spec(tmp_path / "s.toml")
    assert spec.model.path == str(tmp_path / "m.gguf")


def test_parse_set() -> None:
    assert parse_set(["-fa=on", "--parallel=4", "--no-warmup", "--x=0.5"]) == {
        "-fa": "on",
        "--parallel": 4,
        "--no-warmup": True,
        "--x": 0.5,
    }
    with pytest.raises(SpecError):
        parse_set(["fa=on"])


def test_requirement_syntax() -> None:
    with pytest.raises(SpecError, match="cannot read requirement"):
        parse_spec(GOOD + '\n[objective]\nrequire = ["fast please"]\n')
