"""Hostile values in a deployment: reproduced literally by each format, or refused.

A stored run whose environment, flags, model name or the ``--user`` option carry shell
metacharacters, systemd specifiers, quotes or newlines must not add a directive to a
unit, run a command from a script, or write through a planted symlink.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bringup.deploy import DeployOptions, deployment_from, render, resolve_trial, write_deployment
from bringup.errors import BringupError
from bringup.store import Store
from bringup.verdict import Stage, Status, TrialResult

# values a quoting bug would turn into commands, expansions or new lines
TRICKY = ["$(touch PWNED)", "`touch PWNED`", "a;touch PWNED", 'it\'s "q" \\ %h $HOME ${X}']
NEWLINE = "x\nExecStartPre=/bin/touch /tmp/PWNED"
DUMP = (
    "import json, os, sys; "
    'json.dump({"argv": sys.argv[1:], "env": dict(os.environ)}, open(sys.argv[1], "w"))'
)


def make_store(
    tmp_path: Path,
    *,
    env: dict[str, str] | None = None,
    extra_argv: list[str] | None = None,
    name: str | None = None,
    program: list[str] | None = None,
) -> Store:
    spec: dict[str, Any] = {
        "engine": {"name": "llama.cpp", "env": {}},
        "model": {"path": "/m.gguf", "name": name},
        "launch": {"host": "127.0.0.1", "env": env or {}},
    }
    store = Store(tmp_path / "bringup.db")
    run_id = store.create_run(
        spec_path="s.toml",
        spec_digest="d",
        spec_json=json.dumps(spec),
        engine="llama.cpp",
        fingerprint={"model": "/m.gguf"},
        fingerprint_key="fp",
        run_dir="r",
    )
    argv = [*(program or ["/opt/llama-server"]), "--host", "127.0.0.1", "--port", "8123"]
    good = TrialResult(
        trial_id=f"{run_id}-t001",
        flags={},
        status=Status.PASSED,
        stage=Stage.PASSED,
        command=argv + (extra_argv or []),
        host="127.0.0.1",
        port=8123,
    )
    kw: dict[str, Any] = {"fingerprint_key": "fp", "engine": "llama.cpp", "engine_version": "b1"}
    store.save_trial(run_id, 1, good, cfg_key="a", **kw)
    store.finish_run(run_id, "done", good.trial_id, [], [])
    return store


def _dep(store: Store) -> Any:
    return deployment_from(*resolve_trial(store, None))


@pytest.mark.parametrize(
    "case",
    ["env_value", "flag_value", "model_name", "user"],
)
def test_systemd_refuses_a_newline_that_would_add_a_directive(tmp_path: Path, case: str) -> None:
    store = make_store(
        tmp_path,
        env={"A": NEWLINE} if case == "env_value" else None,
        extra_argv=["--alias", NEWLINE] if case == "flag_value" else None,
        name=NEWLINE if case == "model_name" else None,
    )
    options = DeployOptions(user=NEWLINE if case == "user" else "bringup", bringup_bin="/b")
    with pytest.raises(BringupError, match=r"control character|not a user name") as err:
        render(_dep(store), "systemd", options)
    assert "\n" not in str(err.value)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd is not installed")
def test_systemd_keeps_specifiers_dollars_and_quotes_literal(tmp_path: Path) -> None:
    engine = tmp_path / "srv"
    engine.write_text("#!/bin/sh\nexit 0\n")
    engine.chmod(0o755)
    store = make_store(
        tmp_path, env={"A": "a$b %h \"q\" \\"}, extra_argv=["--x", TRICKY[3], ";"],
        program=[str(engine)],
    )  # fmt: skip
    [unit] = write_deployment(
        _dep(store), "systemd", tmp_path / "o", DeployOptions(bringup_bin="/b")
    )
    out = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr.strip() == "", out.stderr
    text = unit.read_text()
    # Environment= expands % but never $; ExecStart= expands both
    assert 'Environment="A=a$b %%h \\"q\\" \\\\"' in text
    assert '"it\'s \\"q\\" \\\\ %%h $$HOME $${X}" ";"' in text
    assert not any(line.startswith("ExecStartPre") for line in text.splitlines())


def test_script_runs_the_exact_command_and_nothing_else(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    env = {f"V{i}": v for i, v in enumerate([*TRICKY, NEWLINE])}
    hostile = [*TRICKY, NEWLINE, "-", "--"]
    store = make_store(
        tmp_path, env=env, extra_argv=hostile, program=[sys.executable, "-c", DUMP, str(dump)]
    )
    [script] = write_deployment(_dep(store), "script", tmp_path / "o")
    run_env = {k: v for k, v in os.environ.items() if k not in env}
    out = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, env=run_env,
        timeout=60,
    )  # fmt: skip
    assert "the server exited" in out.stderr, out.stderr
    got = json.loads(dump.read_text())
    assert got["argv"][-len(hostile) :] == hostile
    assert {k: got["env"][k] for k in env} == env
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("target", ["script", "systemd", "k8s", "compose"])
def test_invalid_env_names_are_refused(tmp_path: Path, target: str) -> None:
    store = make_store(tmp_path, env={"A;touch PWNED;B": "1"})
    with pytest.raises(BringupError, match="is not a valid name"):
        render(_dep(store), target, DeployOptions(bringup_bin="/b"))  # type: ignore[arg-type]


def test_k8s_and_compose_reproduce_values_literally(tmp_path: Path) -> None:
    odd = "line\u2028sep\x85nel $(HOME) ${HOME}"
    store = make_store(tmp_path, env={"A": odd}, extra_argv=["--alias", odd], name="m$(x)")
    dep = _dep(store)
    k8s = render(dep, "k8s")["bringup-llama-cpp.k8s.yaml"]
    [deploy_doc, _svc] = [d for d in yaml.safe_load_all(k8s) if d]
    container = deploy_doc["spec"]["template"]["spec"]["containers"][0]
    # Kubernetes reduces $$ to $ in command and env values: the engine sees the value as is
    assert {"name": "A", "value": odd.replace("$", "$$")} in container["env"]
    assert odd.replace("$", "$$") in container["command"]
    compose = yaml.safe_load(render(dep, "compose")["compose.yaml"])
    service = compose["services"]["bringup-llama-cpp"]
    assert service["environment"]["A"] == odd.replace("$", "$$")
    assert "m$$(x)" in service["healthcheck"]["test"]  # Compose interpolates $ here too


def test_comments_never_carry_a_raw_newline(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    dep = _dep(store)
    dep.engine_version = "b1\nrm -rf /"
    for target in ("script", "k8s", "compose"):
        for text in render(dep, target).values():  # type: ignore[arg-type]
            assert "\nrm -rf /" not in text


def test_image_option_is_one_reference(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    with pytest.raises(BringupError, match="not an image reference"):
        render(_dep(store), "k8s", DeployOptions(base_image="x\nRUN touch /PWNED"))


def test_a_planted_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    out = tmp_path / "o"
    out.mkdir()
    (out / "bringup-llama-cpp.sh").symlink_to(victim)
    [script] = write_deployment(_dep(store), "script", out)
    assert victim.read_text() == "precious\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert not script.is_symlink() and os.access(script, os.X_OK)
    assert [p.name for p in out.iterdir()] == ["bringup-llama-cpp.sh"]  # no temp file left


def test_spec_refuses_env_names_before_anything_runs() -> None:
    from bringup.errors import SpecError
    from bringup.spec import parse_spec

    text = '[engine]\nname = "llama.cpp"\n[model]\npath = "m"\n[launch]\nenv = {"A;B" = "1"}\n'
    with pytest.raises(SpecError, match=r"field 'launch.env'.*not valid"):
        parse_spec(text)
