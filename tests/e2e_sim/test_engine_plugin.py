"""An outside engine plugin can supply everything a built-in has.

A throw-away package ``toyengine`` (written to a temporary folder with a ``bringup.engines``
entry point, registered in this process through pluggy; the simulated engine's own process
finds it through the entry point, as an installed plugin would be found) brings its adapter,
its diagnosis rules, its fatal and ready lines, what-it-chose reader, captured help with a
renamed flag, a deployment image and a simulated-engine profile. A whole sweep then runs
against the simulated engine imitating it, and ``bringup diagnose --engine toy`` reads its
log with its rules.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.diagnose_cmd import diagnose
from bringup.engines.registry import find_engine, get_engine, plugin_manager
from bringup.spec import Spec
from bringup.store import Store
from bringup.sweep import SweepOptions, prepare, run_sweep
from bringup.testing.simengine.world import load_world
from bringup.verdict import Category, Stage, Status

from .conftest import SIM, shrink

PLUGIN = '''
"""A toy engine, as an outside package would ship it."""

import re

from bringup.diagnose.rule import RuleSet, rule
from bringup.engines.base import EngineImage
from bringup.engines.flagcheck import CapturedHelp, KnownChange
from bringup.engines.pyengine import PythonEngineAdapter
from bringup.engines.registry import hookimpl
from bringup.testing.simengine.profile import SimProfile
from bringup.verdict import Category

RULES = RuleSet(
    engine="toy",
    rules=(
        rule(
            r"toy kernel (?P<kernel>\\w+) melted",
            Category.UNSUPPORTED_HARDWARE,
            6,
            "the {kernel} kernel does not run on this device: choose another --toy-kernel",
            name="toy-kernel-melted",
            flags=("--toy-kernel",),
        ),
    ),
)


class ToyAdapter(PythonEngineAdapter):
    name = "toy"
    aliases = ("toy-serve",)
    display = "ToyServe"
    executable = "toy-serve"
    subcommand = ("serve",)
    help_markers = ("--port", "--toy-kernel")
    model_flag = "--model"
    ready_pattern = r"toy is serving"
    rules = (RULES,)
    fatal_patterns = (r"TOY FATAL:",)
    captured_help = CapturedHelp("toyengine", "toy-1.0-help.txt", "1.0", "argparse")
    known_changes = (KnownChange("--toy-old", "renamed in ToyServe 1.0", "--toy-kernel"),)
    image = EngineImage("example.org/toy:cpu", "example.org/toy:gpu")
    sim_profile = SimProfile(
        log_format="TOY {line}",
        ready_lines=("toy kernel chosen: auto", "toy is serving on {url}"),
        model_flags=("--model",),
        reject="toy-serve: error: unrecognized arguments: {flag}",
    )

    def read_chosen(self, lines, found):
        for line in lines:
            m = re.search(r"toy kernel chosen: (\\w+)", line)
            if m:
                found["toy_kernel"] = m.group(1)


@hookimpl
def register_engines(register):
    register(ToyAdapter())
'''

HELP = """usage: toy-serve serve [-h] --model MODEL [--host HOST] [--port PORT]

options:
  -h, --help            show this help message and exit
  --model MODEL         the model to serve
  --served-model-name NAME
                        the name to answer under
  --host HOST           address to bind
  --port PORT           port to bind
  --toy-kernel {safe,fast,melt}
                        which kernel runs the model
"""

WORLD = """
[world]
name = "toy-world"
engine = "toy"
engine_version = "1.0"
model = "toy/model"

[timing]
startup_s = 30.0

[space]
"--toy-kernel" = ["safe", "fast", "melt"]

[reference]
"--toy-kernel" = "safe"

[performance]
output_tok_s = 200.0
ttft_p50_ms = 10.0
noise = 0.0

[performance.effects."--toy-kernel"]
"fast" = 1.5

[[outcome]]
when = { "--toy-kernel" = "melt" }
kind = "crash"
after_s = 10.0
exit_code = 1
log = "TOY FATAL: toy kernel melt melted on this device"
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    package = tmp_path / "plugins" / "toyengine"
    (package / "help").mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    (package / "help" / "toy-1.0-help.txt").write_text(HELP, encoding="utf-8")
    dist = tmp_path / "plugins" / "toyengine-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toyengine\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[bringup.engines]\ntoy = toyengine\n")
    pm = plugin_manager()  # built-ins and installed entry points, before the toy is findable
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    module = importlib.import_module("toyengine")
    pm.register(module, name="toyengine")
    try:
        yield tmp_path
    finally:
        plugin_manager().unregister(name="toyengine")
        sys.modules.pop("toyengine", None)


def test_the_plugin_supplies_every_table(toy: Path) -> None:
    adapter = find_engine("TOY-SERVE")
    assert adapter is not None and adapter.name == "toy"
    assert get_engine("toy") is adapter
    assert adapter.is_fatal("TOY FATAL: toy kernel melt melted on this device")
    assert not adapter.is_fatal("toy kernel chosen: safe")
    assert adapter.chosen("TOY toy kernel chosen: fast\n") == {"toy_kernel": "fast"}
    spec = Spec.model_validate({"engine": {"name": "toy"}, "model": {"path": "toy/model"}})
    problems = adapter.check_flags(spec, {"--toy-old": "safe", "--toy-kernel": "slow"})
    by_flag = {p.flag: p for p in problems}
    assert by_flag["--toy-old"].replacement == "--toy-kernel"
    assert "renamed in ToyServe 1.0" in by_flag["--toy-old"].message
    assert "toy-1.0-help.txt" in by_flag["--toy-kernel"].message
    assert "valid choices: safe, fast, melt" in by_flag["--toy-kernel"].message


def test_diagnose_reads_the_plugins_log_with_its_rules(toy: Path) -> None:
    log = toy / "toy.log"
    log.write_text("TOY loading\nTOY FATAL: toy kernel melt melted on this device\n")
    result = CliRunner().invoke(diagnose, [str(log), "--engine", "toy-serve", "--exit-code", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("unsupported_hardware")
    assert "the melt kernel does not run on this device" in result.output
    assert "decided by rule toy:toy-kernel-melted" in result.output
    unknown = CliRunner().invoke(diagnose, [str(log), "--engine", "no-such-engine"])
    assert unknown.exit_code == 2
    assert "toy" in unknown.output


def test_a_sweep_runs_against_the_plugin(toy: Path) -> None:
    world_file = toy / "toy-world.toml"
    world_file.write_text(WORLD, encoding="utf-8")
    world = load_world(str(world_file))
    spec = world.to_spec()
    spec.engine.binary = " ".join(SIM)
    spec.engine.env.update(BRINGUP_SIM_WORLD=str(world_file), BRINGUP_SIM_SPEED="100")
    # the simulated engine's process loads the plugin through its entry point
    path = os.pathsep.join(p for p in (str(toy / "plugins"), os.environ.get("PYTHONPATH")) if p)
    spec.engine.env["PYTHONPATH"] = path
    shrink(spec)
    store = Store(toy / "bringup.db")
    loop = asyncio.new_event_loop()
    try:
        outcome = loop.run_until_complete(
            run_sweep(prepare(spec), store, SweepOptions(runs_dir=str(toy / "runs")))
        )
    finally:
        loop.close()
    by_kernel = {r.flags["--toy-kernel"]: r for r in outcome.results}
    assert by_kernel["safe"].status is Status.PASSED
    assert by_kernel["fast"].status is Status.PASSED
    assert by_kernel["safe"].chosen.get("toy_kernel") == "auto"
    melted = by_kernel["melt"]
    assert melted.status is Status.FAILED and melted.failure is not None
    assert melted.failure.stage is Stage.READY
    assert melted.failure.category is Category.UNSUPPORTED_HARDWARE
    assert any("melted" in line for line in melted.failure.evidence)
    assert melted.failure.rule == "toy:toy-kernel-melted"
    assert melted.failure.flags == ["--toy-kernel"]
    row = next(r for r in store.trials(outcome.run_id) if r.flags["--toy-kernel"] == "melt")
    assert row.rule == "toy:toy-kernel-melted" and row.implicated == ["--toy-kernel"]
    assert outcome.winner is not None and outcome.winner.config["--toy-kernel"] == "fast"
