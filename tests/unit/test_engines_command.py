"""The generic command engine: templates, health path, help-file checks, model ids."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bringup.engines.command import CommandAdapter
from bringup.engines.registry import get_engine
from bringup.errors import EngineNotInstalledError, ModelNotFoundError
from bringup.spec import Spec, parse_spec


def _spec(engine: str, model: str = "Qwen/Qwen3-8B", extra: str = "") -> Spec:
    return parse_spec(f'[engine]\nname = "command"\n{engine}\n[model]\npath = "{model}"\n{extra}')


def test_registered() -> None:
    assert isinstance(get_engine("command"), CommandAdapter)
    assert isinstance(get_engine("generic"), CommandAdapter)


def test_needs_a_command_line() -> None:
    with pytest.raises(EngineNotInstalledError, match=r"engine\.command"):
        CommandAdapter().locate(_spec(""))
    with pytest.raises(EngineNotInstalledError, match="no-such-server"):
        CommandAdapter().locate(_spec('command = ["no-such-server", "--port", "{port}"]'))


def test_template_is_filled_and_flags_appended() -> None:
    spec = _spec(
        f'command = ["{sys.executable}", "-m", "srv", "--model", "{{model}}", '
        '"--bind={host}:{port}", "--name", "{name}"]\nhealth_path = "/ping"\ngpus = [1]',
        extra='[launch]\nargs = ["--workers", "2"]\n',
    )
    adapter = CommandAdapter()
    argv = adapter.build_command(spec, {"--max-batch": 8, "--fast": True}, "127.0.0.1", 9000)
    assert argv == [
        sys.executable, "-m", "srv", "--model", "Qwen/Qwen3-8B", "--bind=127.0.0.1:9000",
        "--name", "Qwen/Qwen3-8B", "--workers", "2", "--max-batch", "8", "--fast",
    ]  # fmt: skip
    assert adapter.health_path_for(spec) == "/ping"
    assert adapter.env(spec, {})["CUDA_VISIBLE_DEVICES"] == "1"


def test_port_placeholder_required_unless_pinned() -> None:
    spec = _spec(f'command = ["{sys.executable}", "-m", "srv"]')
    [problem] = CommandAdapter().check_flags(spec, {})
    assert "{port}" in problem.message
    pinned = _spec(f'command = ["{sys.executable}", "-m", "srv"]', extra="[launch]\nport = 8080\n")
    assert CommandAdapter().check_flags(pinned, {}) == []


def test_help_file_enables_flag_checks(tmp_path: Path) -> None:
    help_file = tmp_path / "help.txt"
    help_file.write_text(
        "usage: srv [-h]\n\noptions:\n"
        "  --port PORT\n"
        "  --dtype {float16,bfloat16}\n"
        "  --max-batch MAX_BATCH\n"
    )
    spec = _spec(f'command = ["{sys.executable}", "--port", "{{port}}"]\nhelp_file = "{help_file}"')
    [problem] = CommandAdapter().check_flags(spec, {"--dtype": "fp8", "--max-batch": 4})
    assert "float16, bfloat16" in problem.message and str(help_file) in problem.message


def test_model_ids_pass_and_missing_paths_fail(tmp_path: Path) -> None:
    cmd = f'command = ["{sys.executable}", "{{port}}"]'
    CommandAdapter().check_model(_spec(cmd, model="llama3:8b"))
    with pytest.raises(ModelNotFoundError):
        CommandAdapter().check_model(_spec(cmd, model=str(tmp_path / "absent.gguf")))
