"""Deployments written from a stored trial: secrets, readiness budget, and each target
checked by the tool that owns its format (bash, systemd-analyze, the Kubernetes schemas,
the Compose schema)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from bringup.cli.deploy_cmd import deploy
from bringup.deploy import (
    DeployOptions,
    deployment_from,
    is_secret_name,
    redact_argv,
    render,
    resolve_trial,
    start_budget,
    write_deployment,
)
from bringup.errors import BringupError
from bringup.secrets import split_argv
from bringup.store import Store
from bringup.verdict import Category, Stage, Status, TrialResult

API_KEY = "sk-deploy-0123456789"
HF_TOKEN = "hf_secret_abcdefgh"
COMPOSE_SCHEMA = Path(__file__).parent / "data" / "compose-spec.json"

# A stand-in engine: health 200 and a right answer, only with the right API key.
ENGINE = """
import sys
from aiohttp import web
args = sys.argv[1:]
def arg(flag): return args[args.index(flag) + 1]
host, port, key = arg("--host"), int(arg("--port")), arg("--api-key")
async def health(request): return web.json_response({"status": "ok"})
async def complete(request):
    if request.headers.get("Authorization") != "Bearer " + key:
        return web.json_response({"error": "bad key"}, status=401)
    return web.json_response({"choices": [{"text": " Paris, the city", "finish_reason": "length"}]})
app = web.Application()
app.add_routes([web.get("/health", health), web.post("/v1/completions", complete)])
web.run_app(app, host=host, port=port, print=None)
"""


def make_store(
    tmp_path: Path,
    *,
    command: list[str] | None = None,
    gpus: int = 1,
    ready_s: float = 95.4,
    port: int = 8123,
) -> tuple[Store, str]:
    spec = {
        "engine": {"name": "llama.cpp", "env": {"GGML_CUDA_FORCE_MMQ": "1"}},
        "model": {"path": str(tmp_path / "models" / "m.gguf")},
        # the spec pins the port the deployment serves on (the trial ran there too)
        "launch": {
            "host": "127.0.0.1",
            "port": port,
            "env": {"HF_TOKEN": HF_TOKEN},
            "start_timeout_s": 300,
        },
        "space": {"--flash-attn": ["on", "off"]},
    }
    fp = {
        "cpu": "x",
        "cores": 2,
        "model": str(tmp_path / "models" / "m.gguf"),
        "gpus": [{"name": "G", "compute_capability": "9.0", "driver": "1", "memory": "1"}] * gpus,
    }
    store = Store(tmp_path / "bringup.db")
    run_id = store.create_run(
        spec_path="s.toml",
        spec_digest="d",
        spec_json=json.dumps(spec),
        engine="llama.cpp",
        fingerprint=fp,
        fingerprint_key="fp",
        run_dir="r",
    )
    argv = command or [
        "/opt/llama/llama-server",
        "-m",
        str(tmp_path / "models" / "m.gguf"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--api-key",
        API_KEY,
        "--flash-attn",
        "on",
        "-c",
        "4096",
    ]
    kw = {"fingerprint_key": "fp", "engine": "llama.cpp", "engine_version": "b1"}
    good = TrialResult(
        trial_id=f"{run_id}-t001",
        flags={"--flash-attn": "on"},
        status=Status.PASSED,
        stage=Stage.PASSED,
        command=argv,
        host="127.0.0.1",
        port=port,
        health_path="/health",
        timings={"ready_s": ready_s},
        metrics={"output_tok_s": 321.0},
    )
    bad = TrialResult(trial_id=f"{run_id}-t002", flags={"--flash-attn": "off"}, command=argv)
    bad.fail(Stage.READY, Category.OOM_GPU, ["CUDA out of memory"])
    store.save_trial(run_id, 1, good, cfg_key="a", **kw)  # type: ignore[arg-type]
    store.save_trial(run_id, 2, bad, cfg_key="b", **kw)  # type: ignore[arg-type]
    store.finish_run(run_id, "done", good.trial_id, [], [])
    return store, run_id


def _all_text(files: dict[str, str]) -> str:
    return "\n".join(files.values())


def test_secret_names_and_argv() -> None:
    assert all(
        map(is_secret_name, ["HF_TOKEN", "OPENAI_API_KEY", "--api-key", "DB_PASSWORD", "x_secret"])
    )
    assert not any(
        map(is_secret_name, ["--ssl-key-file", "--cache-type-k", "CUDA_VISIBLE_DEVICES", "--port"])
    )
    split = split_argv(["srv", "--api-key", "abc", "--hf-token=tok", "--port", "1"])
    assert split.secrets == ["API_KEY", "HF_TOKEN"]
    assert redact_argv(["srv", "--api-key", "abc", "--hf-token=tok"]) == [
        "srv",
        "--api-key",
        "***",
        "--hf-token",
        "***",
    ]


def test_budget_grows_with_measured_cold_start() -> None:
    assert start_budget(2.0, 300) == 120  # at least two minutes
    assert start_budget(95.4, 300) == 251  # twice the measurement plus a minute
    assert start_budget(None, 600) == 600  # nothing measured: the spec's timeout


def test_resolve_winner_named_trial_and_refusals(tmp_path: Path) -> None:
    store, run_id = make_store(tmp_path)
    assert resolve_trial(store, None)[1].id == f"{run_id}-t001"
    assert resolve_trial(store, run_id)[1].id == f"{run_id}-t001"
    assert resolve_trial(store, f"{run_id}-t001")[1].status == "passed"
    with pytest.raises(BringupError, match=r"oom_gpu.*only a passed trial"):
        resolve_trial(store, f"{run_id}-t002")
    with pytest.raises(BringupError, match="no run or trial matches"):
        resolve_trial(store, "nope")
    with pytest.raises(BringupError, match="no runs yet"):
        resolve_trial(Store(tmp_path / "empty.db"), None)


@pytest.mark.parametrize("target", ["script", "systemd", "k8s", "compose"])
def test_no_secret_is_written(tmp_path: Path, target: str) -> None:
    store, _ = make_store(tmp_path)
    dep = deployment_from(*resolve_trial(store, None))
    text = _all_text(render(dep, target, DeployOptions(bringup_bin="/usr/bin/bringup")))  # type: ignore[arg-type]
    assert API_KEY not in text and HF_TOKEN not in text
    assert "API_KEY" in text and "HF_TOKEN" in text  # referenced by name
    assert "GGML_CUDA_FORCE_MMQ" in text  # ordinary environment is written


def test_script_is_valid_bash_with_the_exact_command(tmp_path: Path) -> None:
    store, _ = make_store(tmp_path)
    dep = deployment_from(*resolve_trial(store, None))
    [path] = write_deployment(dep, "script", tmp_path / "out")
    assert os.access(path, os.X_OK)
    subprocess.run(["bash", "-n", str(path)], check=True)
    text = path.read_text()
    assert "  /opt/llama/llama-server\n  -m\n" in text and '--api-key\n  "$API_KEY"\n' in text
    assert (
        "deadline=$((SECONDS + 251))" in text
        and 'probe "$URL" --timeout 10 --api-key-env API_KEY' in text
    )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_script_starts_the_server_and_waits_for_a_right_answer(tmp_path: Path) -> None:
    engine = tmp_path / "engine.py"
    engine.write_text(ENGINE)
    port = _free_port()
    command = [
        sys.executable,
        str(engine),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--api-key",
        API_KEY,
    ]
    store, _ = make_store(tmp_path, command=command, port=port)
    [path] = write_deployment(
        deployment_from(*resolve_trial(store, None)), "script", tmp_path / "out"
    )
    env = dict(
        os.environ,
        API_KEY=API_KEY,
        HF_TOKEN="x",
        BRINGUP=str(Path(sys.executable).parent / "bringup"),
    )
    proc = subprocess.Popen(
        [str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"bringup-llama-cpp: ready at http://127.0.0.1:{port}"), line
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def test_script_refuses_to_start_without_its_secret(tmp_path: Path) -> None:
    store, _ = make_store(tmp_path)
    [path] = write_deployment(
        deployment_from(*resolve_trial(store, None)), "script", tmp_path / "o"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("API_KEY", "HF_TOKEN")}
    out = subprocess.run([str(path)], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode != 0 and "set HF_TOKEN in the environment" in out.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd is not installed")
def test_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    engine = tmp_path / "llama-server"
    engine.write_text("#!/bin/sh\nexit 0\n")
    engine.chmod(0o755)
    command = [
        str(engine),
        "-m",
        "/m.gguf",
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--api-key",
        API_KEY,
    ]
    store, _ = make_store(tmp_path, command=command)
    dep = deployment_from(*resolve_trial(store, None))
    options = DeployOptions(bringup_bin="/usr/bin/bringup", user="bringup")
    paths = write_deployment(dep, "systemd", tmp_path / "out", options)
    unit = next(p for p in paths if p.suffix == ".service")
    out = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stderr.strip() == "", out.stderr
    text = unit.read_text()
    for line in (
        "Restart=on-failure",
        "User=bringup",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "PrivateTmp=no",  # the engine lives under /tmp here: a private /tmp would hide it
        f"ReadOnlyPaths={tmp_path}",
        "TimeoutStartSec=251",
        "EnvironmentFile=/etc/bringup/bringup-llama-cpp.env",
        "--api-key ${API_KEY}",
        "PrivateDevices=no",
    ):
        assert line in text, line
    assert 'ExecStartPost=/bin/sh -c "until /usr/bin/bringup probe http://127.0.0.1:8123' in text
    # the same unit with a broken directive is refused: the check can fail
    unit.write_text(text.replace("Restart=on-failure", "Restart=sometimes"))
    bad = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert "restart specifier" in bad.stderr


def _k8s_docs(tmp_path: Path, gpus: int) -> list[dict[str, object]]:
    store, _ = make_store(tmp_path, gpus=gpus)
    files = render(deployment_from(*resolve_trial(store, None)), "k8s")
    assert "Dockerfile" in files and "0.0.0.0" in files["bringup-llama-cpp.k8s.yaml"]
    return [d for d in yaml.safe_load_all(files["bringup-llama-cpp.k8s.yaml"]) if d]


@pytest.mark.parametrize("gpus", [0, 2])
def test_k8s_manifest_is_valid_against_the_kubernetes_schemas(tmp_path: Path, gpus: int) -> None:
    kv = pytest.importorskip("kubernetes_validate")
    from kubernetes_validate.utils import latest_version

    docs = _k8s_docs(tmp_path, gpus)
    assert [d["kind"] for d in docs] == ["Deployment", "Service"]
    for d in docs:
        kv.validate(d, latest_version(), strict=True)  # bundled schemas: no network
    pod = docs[0]["spec"]["template"]["spec"]  # type: ignore[index]
    c = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert c["command"][c["command"].index("--host") + 1] == "0.0.0.0"
    assert "$(API_KEY)" in c["command"]
    assert c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"] >= 251
    assert c["readinessProbe"]["exec"]["command"][:2] == ["bringup", "probe"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    limits = (c.get("resources") or {}).get("limits") or {}
    assert limits.get("nvidia.com/gpu") == (gpus or None)
    bad = json.loads(json.dumps(docs[0]))
    bad["spec"]["template"]["spec"]["containers"][0]["startupProbe"]["failureThreshold"] = "many"
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, latest_version(), strict=True)


def test_compose_file_is_valid_against_the_compose_schema(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    store, _ = make_store(tmp_path)
    files = render(deployment_from(*resolve_trial(store, None)), "compose")
    doc = yaml.safe_load(files["compose.yaml"])
    validator = jsonschema.Draft7Validator(json.loads(COMPOSE_SCHEMA.read_text()))
    assert list(validator.iter_errors(doc)) == []
    svc = doc["services"]["bringup-llama-cpp"]
    assert svc["healthcheck"]["test"][:3] == ["CMD", "bringup", "probe"]
    assert svc["environment"]["API_KEY"] == "${API_KEY:?set API_KEY}"
    assert svc["command"][svc["command"].index("--host") + 1] == "0.0.0.0"
    assert svc["ports"] == ["127.0.0.1:8123:8123"]
    svc["healthcheck"]["every"] = "30s"  # not a healthcheck key: the schema refuses it
    assert list(validator.iter_errors(doc))


def test_cli_writes_files_and_names_the_secrets(tmp_path: Path) -> None:
    store, run_id = make_store(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        deploy,
        [run_id, "--to", "compose", "--out", str(out), "--db", str(store.path), "--port", "9000"],
    )
    assert result.exit_code == 0, result.output
    assert "secrets to provide (never written): HF_TOKEN, API_KEY" in result.output
    assert "0.0.0.0" in result.output
    assert '"--port", "9000"' in (out / "compose.yaml").read_text()
    missing = CliRunner().invoke(deploy, ["--to", "script", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code != 0 and isinstance(missing.exception, BringupError)


READY_ONLY = """
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/ready" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def test_command_engine_health_path_recorded_at_launch_reaches_the_probes(
    tmp_path: Path,
) -> None:
    """A ``command`` engine answering health on /ready: readiness polls /ready, the trial
    records it, and the deployment's probes use it (they used to probe /health)."""
    import asyncio

    from bringup.engines.registry import get_engine
    from bringup.plan import PlannedTrial
    from bringup.spec import parse_spec
    from bringup.trial import TrialContext, run_trial

    server = tmp_path / "ready_only.py"
    server.write_text(READY_ONLY)
    spec = parse_spec(
        f'[engine]\nname = "command"\ncommand = ["{sys.executable}", "{server}", "--port", '
        '"{port}"]\nhealth_path = "/ready"\n[model]\npath = "srv-model"\n'
        "[launch]\nstart_timeout_s = 60\n[checks]\naccuracy = false\n"
    )
    store = Store(tmp_path / "bringup.db")
    run_id = store.create_run(
        spec_path=None,
        spec_digest="d",
        spec_json=spec.public_json(),
        engine="command",
        fingerprint={},
        fingerprint_key="fp",
        run_dir=str(tmp_path),
    )
    ctx = TrialContext(spec, get_engine("command"), tmp_path, benchmark=False)
    trial = asyncio.run(run_trial(ctx, PlannedTrial({}), f"{run_id}-t001"))
    result = trial.result
    # it got past readiness on /ready (it has no completions endpoint, so checks fail)
    assert result.stage is not Stage.READY and result.timings.get("ready_s") is not None
    kw = {"fingerprint_key": "fp", "engine": "command", "engine_version": "x"}
    store.save_trial(run_id, 1, result, cfg_key="a", **kw)  # type: ignore[arg-type]
    [row] = store.trials(run_id)
    assert (row.host, row.port, row.health_path) == ("127.0.0.1", result.port, "/ready")
    run = store.run(run_id)
    assert run is not None
    # deploy reads the recorded facts (as it would for this trial had it passed)
    dep = deployment_from(run, dataclasses.replace(row, status=Status.PASSED))
    # no port pinned in the spec: the engine's default, never the trial's free port
    assert dep.health_path == "/ready" and dep.port == 8000 != result.port
    files = render(dep, "k8s", DeployOptions(base_image="srv:1"))
    probed = [
        probe["httpGet"]["path"]
        for name, text in files.items()
        if name.endswith((".yaml", ".yml"))
        for doc in yaml.safe_load_all(text)
        if doc
        for probe in _probes(doc)
    ]
    assert probed and set(probed) == {"/ready"}, probed


def _probes(node: object) -> list[dict[str, Any]]:
    """Every Kubernetes probe with an ``httpGet`` anywhere in a manifest."""
    if isinstance(node, dict):
        found = [node] if isinstance(node.get("httpGet"), dict) else []
        return found + [p for v in node.values() for p in _probes(v)]
    if isinstance(node, list):
        return [p for v in node for p in _probes(v)]
    return []


def _llama_store(tmp_path: Path, model: Path, *, pin: int | None, argv_extra: list[str]) -> Store:
    """A passed llama.cpp trial whose command bringup built (``-lv 4`` included)."""
    spec: dict[str, Any] = {
        "engine": {"name": "llama.cpp"},
        "model": {"path": str(model)},
        "launch": {"args": ["-c", "2048", *argv_extra]} | ({"port": pin} if pin else {}),
    }
    store = Store(tmp_path / "bringup.db")
    run_id = store.create_run(
        spec_path="s.toml",
        spec_digest="d",
        spec_json=json.dumps(spec),
        engine="llama.cpp",
        fingerprint={"model": str(model), "gpus": []},
        fingerprint_key="fp",
        run_dir="r",
    )
    argv = ["/usr/bin/llama-server", "-m", str(model), "--host", "127.0.0.1", "--port", "41234"]
    argv += [] if argv_extra else ["-lv", "4"]
    argv += ["-c", "2048", *argv_extra, "--flash-attn", "on"]
    good = TrialResult(
        trial_id=f"{run_id}-t001",
        flags={"--flash-attn": "on"},
        status=Status.PASSED,
        stage=Stage.PASSED,
        command=argv,
        host="127.0.0.1",
        port=41234,
        health_path="/health",
    )
    kw = {"fingerprint_key": "fp", "engine": "llama.cpp", "engine_version": "b11434 (x)"}
    store.save_trial(run_id, 1, good, cfg_key="a", **kw)  # type: ignore[arg-type]
    store.finish_run(run_id, "done", good.trial_id, [], [])
    return store


def test_deployment_serves_on_the_spec_port_without_the_trials_verbosity(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    dep = deployment_from(
        *resolve_trial(_llama_store(tmp_path, model, pin=None, argv_extra=[]), None)
    )
    words = [str(w) for w in dep.argv]
    assert dep.port == 8080 and words[words.index("--port") + 1] == "8080"  # llama-server's
    assert "-lv" not in words  # bringup added it to watch the trial, not to serve
    (tmp_path / "bringup.db").unlink()
    dep = deployment_from(
        *resolve_trial(_llama_store(tmp_path, model, pin=9001, argv_extra=[]), None)
    )
    assert dep.port == 9001 and "--port 9001" in " ".join(str(w) for w in dep.argv)
    assert (
        deployment_from(*resolve_trial(Store(tmp_path / "bringup.db"), None), port=7000).port
        == 7000
    )


def test_verbosity_the_user_asked_for_stays(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    store = _llama_store(tmp_path, model, pin=None, argv_extra=["-lv", "4"])
    words = [str(w) for w in deployment_from(*resolve_trial(store, None)).argv]
    assert words.count("-lv") == 1


def test_systemd_user_and_tmp_fit_where_the_model_is(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    model = private / "m.gguf"
    model.write_bytes(b"GGUF")
    dep = deployment_from(
        *resolve_trial(_llama_store(tmp_path, model, pin=None, argv_extra=[]), None)
    )
    unit = render(dep, "systemd", DeployOptions(bringup_bin="/usr/bin/bringup"))
    text = unit["bringup-llama-cpp.service"]
    import pwd

    owner = pwd.getpwuid(model.stat().st_uid).pw_name
    assert f"User={owner}" in text and "DynamicUser" not in text  # only it may read the model
    assert "PrivateTmp=no" in text and f"ReadOnlyPaths={private}" in text

    shared = Path(tempfile.mkdtemp(dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    try:
        shared.chmod(0o755)
        for parent in shared.parents:
            if not parent.stat().st_mode & 0o001:
                pytest.skip(f"{parent} is not searchable by others on this machine")
        open_model = shared / "m.gguf"
        open_model.write_bytes(b"GGUF")
        open_model.chmod(0o644)
        (tmp_path / "bringup.db").unlink()
        dep = deployment_from(
            *resolve_trial(_llama_store(tmp_path, open_model, pin=None, argv_extra=[]), None)
        )
        text = render(dep, "systemd", DeployOptions(bringup_bin="/usr/bin/bringup"))[
            "bringup-llama-cpp.service"
        ]
        assert "DynamicUser=yes" in text and "\nUser=" not in text
        if shutil.which("systemd-analyze"):
            unit_path = tmp_path / "bringup-llama-cpp.service"
            unit_path.write_text(text)
            verify = subprocess.run(
                ["systemd-analyze", "verify", str(unit_path)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            # the engine binary of the stored command is not on this machine: only that
            problems = [ln for ln in verify.stderr.splitlines() if "llama-server" not in ln]
            assert not problems, verify.stderr
    finally:
        shutil.rmtree(shared)


def test_the_image_is_the_proven_release_and_bringup_comes_from_a_wheel(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    store = _llama_store(tmp_path, model, pin=None, argv_extra=[])
    files = render(deployment_from(*resolve_trial(store, None)), "k8s")
    dockerfile = files["Dockerfile"]
    assert "FROM ghcr.io/ggml-org/llama.cpp:server-b11434\n" in dockerfile
    assert "COPY bringup-" in dockerfile and "bringup==" not in dockerfile
    dep = deployment_from(*resolve_trial(store, None))
    dep.engine_version = "unknown"
    with pytest.raises(BringupError, match="names no release image; pass --image"):
        render(dep, "compose")
