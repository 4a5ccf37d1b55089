"""Every CLI command is documented in the README (and the README's commands exist)."""

from __future__ import annotations

import re
from pathlib import Path

from bringup.cli.main import cli

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_command_is_in_the_readme() -> None:
    text = README.read_text()
    for name in cli.commands:
        assert f"`bringup {name}" in text, f"bringup {name} is not documented in README.md"


def test_readme_names_no_command_that_does_not_exist() -> None:
    named = set(re.findall(r"`bringup ([a-z]+)", README.read_text()))
    assert named <= set(cli.commands), named - set(cli.commands)


def test_readme_shows_the_two_commands() -> None:
    text = README.read_text()
    assert "make demo" in text and "make test" in text
