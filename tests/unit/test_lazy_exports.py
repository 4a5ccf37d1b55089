"""Names a package exports lazily keep their meaning when a submodule of the same name loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bringup.testing.hostile import sim_spec


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_a_submodule_import_does_not_hide_the_function_of_its_name() -> None:
    # a fresh interpreter: the submodule is loaded first, by a from-import of another name
    code = (
        "import types\n"
        "from bringup.testing.simengine.evaluate import KIND_CATEGORY\n"
        "from bringup.testing.simengine import evaluate\n"
        "print(isinstance(evaluate, types.FunctionType), evaluate.__name__)\n"
    )
    assert _run(code) == "True evaluate"


def test_the_submodule_stays_importable_by_its_full_name() -> None:
    code = (
        "import importlib, sys\n"
        "import bringup.testing.simengine.evaluate\n"
        "mod = sys.modules['bringup.testing.simengine.evaluate']\n"
        "again = importlib.import_module(mod.__name__)\n"
        "print(hasattr(mod, 'outcome_log'), callable(again.evaluate))\n"
    )
    assert _run(code) == "True True"


def test_registering_the_simulated_profile_loads_no_evaluator() -> None:
    code = (
        "import sys\n"
        "import bringup.testing.simengine.profile\n"
        "print('bringup.testing.simengine.evaluate' in sys.modules)\n"
    )
    assert _run(code) == "False"


def test_a_healthy_simulated_engine_builds_no_spec_models_and_no_diagnosis_rules(
    tmp_path: Path,
) -> None:
    # each trial starts one such process: the classifier loads on a crash it must explain,
    # the spec's models where a world becomes a spec, the engine registry for a world that
    # imitates a named engine; a generic world's engine, built from its world file, needs none
    sim_spec(tmp_path)
    code = (
        "import sys\n"
        "from bringup.testing.simengine.__main__ import build\n"
        f"built = build(['--world', {str(tmp_path / 'world.toml')!r}, '--port', '1'])\n"
        "mods = ('bringup.diagnose.classifier', 'bringup.spec', 'bringup.engines.registry')\n"
        "print(type(built).__name__, [m in sys.modules for m in mods])\n"
    )
    assert _run(code) == "tuple [False, False, False]"


def test_the_trial_path_compiles_no_diagnosis_rules() -> None:
    # the classifier loads on a trial's first failure: the modules a trial loads (a Ray
    # worker's first trial among them) do without its rules
    code = (
        "import sys\n"
        "import bringup.trial, bringup.trial_checks\n"
        "print('bringup.diagnose.classifier' in sys.modules)\n"
    )
    assert _run(code) == "False"
