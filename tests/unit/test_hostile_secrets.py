"""No secret value in any artifact or terminal line, whatever its source: a secret-named
flag searched in [space], one in launch.args, one in the engine's environment.

A whole sweep runs (the simulated engine echoes its flags into its log, as engines do),
then every command that writes or prints something; every file under the work folder and
every line printed is searched for the clear values.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bringup.cli.main import cli
from bringup.testing.hostile import sim_spec

SPACE_KEY = "sk-space-0123456789abcdef"
ARGS_TOKEN = "hf_args_0123456789abcdef"
ENV_TOKEN = "hf_env_0123456789abcdef"
SECRETS = (SPACE_KEY, ARGS_TOKEN, ENV_TOKEN)


def _run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.output


def test_no_secret_in_any_artifact_or_line(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    spec = sim_spec(
        tmp_path,
        space={"--api-key": [SPACE_KEY], "--max-batch": [1, 2]},
        launch_args=["--hf-token", ARGS_TOKEN],
        env={"HF_TOKEN": ENV_TOKEN},
    )
    db = str(work / "b.db")
    printed = _run("sweep", str(spec), "--db", db, "--runs-dir", str(work / "runs"))
    assert "winner" in printed and "launch command:" in printed, printed
    printed += _run(
        "report", "--db", db, "--json", str(work / "r.json"), "--csv", str(work / "r.csv"),
        "--html", str(work / "r.html"),
    )  # fmt: skip
    printed += _run("matrix", "--db", db)
    for target in ("script", "systemd", "k8s", "compose"):
        out = str(work / target)
        printed += _run("deploy", "--db", db, "--to", target, "--out", out, "--image", "img:1")
    files = [p for p in work.rglob("*") if p.is_file()]
    assert len(files) >= 12  # db, two logs, three reports, deployments
    for secret in SECRETS:
        assert secret not in printed, secret
        for path in files:
            assert secret.encode() not in path.read_bytes(), (secret, path)
    logs = list((work / "runs").rglob("*.log"))
    assert logs and any(b"--api-key" in p.read_bytes() for p in logs)  # echoed, masked
