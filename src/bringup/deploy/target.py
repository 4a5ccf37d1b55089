"""What gets deployed: one proven trial turned into a :class:`Deployment`.

``resolve_trial(store, ref)`` finds the trial to ship: the winner of the latest run (no
ref), of a named run, or a named passed trial (a typed :class:`~bringup.store.TrialRow`).
``deployment_from(run, trial)`` reads what the trial recorded at launch (command line,
host, port, health path) and its measured cold start, with the spec's environment; secret
values (API keys, tokens) are replaced by references to environment variables, never kept.
The start-up budget is the measured cold start with a margin: a fresh machine reads the
model from a cold page cache, so twice the measurement plus a minute, at least two minutes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.errors import BringupError
from bringup.secrets import SecretRef, is_secret_name, split_argv
from bringup.store import Store, TrialRow
from bringup.verdict import Status

MIN_START_BUDGET_S = 120
ANY_ADDRESS = "0.0.0.0"


@dataclass
class Deployment:
    name: str  # a slug usable as unit, container and Kubernetes object name
    engine: str
    engine_version: str
    run_id: str
    trial_id: str
    flags: dict[str, Any]
    argv: list[str | SecretRef]  # the stored command line, secrets referenced
    env: dict[str, str]  # environment without secrets
    secret_env: list[str]  # names of environment variables that carry secrets
    host: str
    port: int
    health_path: str
    ready_s: float | None
    start_budget_s: int
    model_path: str | None
    served_model: str | None
    gpus: int
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def probe_url(self) -> str:
        """Where a probe on the same machine reaches the server."""
        host = "127.0.0.1" if self.host in (ANY_ADDRESS, "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def api_key_env(self) -> str | None:
        """The secret the probe needs to authenticate (the API key, when there is one)."""
        for word in self.argv:
            if isinstance(word, SecretRef) and word.flag and "key" in word.flag.lower():
                return word.env
        return None

    def with_host(self, host: str) -> list[str | SecretRef]:
        """The command line with the bind address replaced (containers listen on 0.0.0.0)."""
        return _replace_flag(self.argv, "--host", host)

    def with_port(self, port: int) -> Deployment:
        self.argv = _replace_flag(self.argv, "--port", str(port))
        self.port = port
        return self


def start_budget(ready_s: float | None, fallback_s: float) -> int:
    if ready_s is None:
        return max(MIN_START_BUDGET_S, math.ceil(fallback_s))
    return max(MIN_START_BUDGET_S, math.ceil(ready_s * 2 + 60))


def _replace_flag(argv: list[str | SecretRef], flag: str, value: str) -> list[str | SecretRef]:
    out: list[str | SecretRef] = []
    skip = False
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word == flag and i + 1 < len(argv):
            out.extend([flag, value])
            skip = True
        elif isinstance(word, str) and word.startswith(flag + "="):
            out.append(f"{flag}={value}")
        else:
            out.append(word)
    return out


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (s or "engine")[:50].strip("-")


def resolve_trial(store: Store, ref: str | None) -> tuple[dict[str, Any], TrialRow]:
    """(run, trial) to deploy: the winner of a run, or a named passed trial."""
    trial = store.trial(ref) if ref else None
    run = None
    if trial is None or trial.id != ref:  # not an exact trial id: a run takes precedence
        run = store.run(ref)
    if run is not None:
        if not run.get("winner_trial"):
            raise BringupError(
                f"run {run['id']} has no winner (no configuration passed); name a passed trial."
            )
        trial = store.trial(run["winner_trial"])
        if trial is None:
            raise BringupError(f"the winner {run['winner_trial']} of run {run['id']} is missing.")
    elif trial is not None:
        run = store.run(trial.run_id)
    if trial is None or run is None:
        if ref:
            raise BringupError(f"no run or trial matches {ref!r}; `bringup report` lists them.")
        raise BringupError("the results database has no runs yet; run `bringup sweep` first.")
    if trial.status is not Status.PASSED:
        raise BringupError(
            f"trial {trial.id} {trial.status} ({trial.category or trial.stage});"
            " only a passed trial can be deployed."
        )
    if not trial.command:
        raise BringupError(f"trial {trial.id} has no recorded command line to deploy.")
    return run, trial


def _default_health_path(engine: str) -> str:
    """For rows stored before the health path was recorded: the engine's default."""
    from bringup.engines.registry import get_engine

    try:
        return get_engine(engine).health_path
    except BringupError:
        return "/health"


def _engine_defaults(engine: str, argv: list[str], given: set[str]) -> tuple[list[str], int]:
    """The command without what bringup added to watch the trial, and the engine's port."""
    from bringup.engines.registry import find_engine

    adapter = find_engine(engine)
    if adapter is None:
        return argv, 8000
    return adapter.deploy_argv(argv, given), adapter.default_port


def deployment_from(run: dict[str, Any], trial: TrialRow, port: int | None = None) -> Deployment:
    """The trial as deployed. It serves on ``port``, else the spec's pinned
    ``[launch].port``, else the engine's default port, never the trial's free port."""
    spec = run.get("spec") or {}
    launch = spec.get("launch") or {}
    engine = str(run.get("engine") or trial.engine or "engine")
    given = {str(a) for a in launch.get("args") or []} | {str(f) for f in trial.flags}
    argv, default_port = _engine_defaults(engine, [str(w) for w in trial.command], given)
    split = split_argv(argv)
    all_env = dict((spec.get("engine") or {}).get("env") or {}) | dict(launch.get("env") or {})
    secret_env = [k for k in all_env if is_secret_name(k)]
    secret_env += [s for s in split.secrets if s not in secret_env]
    finger = run.get("fingerprint") or {}
    model = finger.get("model") or (spec.get("model") or {}).get("path")
    ready = trial.timings.get("ready_s")
    metrics = trial.metrics
    figures = {
        k: float(metrics[k])
        for k in ("output_tok_s", "ttft_p50_ms", "ttft_p99_ms", "decode_tok_s_single")
        if isinstance(metrics.get(k), int | float)
    }
    dep = Deployment(
        name=slug(f"bringup-{engine}"),
        engine=engine,
        engine_version=str(trial.engine_version or finger.get("engine_version") or "unknown"),
        run_id=run["id"],
        trial_id=trial.id,
        flags=dict(trial.flags),
        argv=split.words,
        env={k: str(v) for k, v in all_env.items() if not is_secret_name(k)},
        secret_env=secret_env,
        # what the trial recorded at launch; the spec's launch section for older rows
        host=trial.host or str(launch.get("host") or "127.0.0.1"),
        port=int(trial.port or launch.get("port") or 8000),
        health_path=trial.health_path or _default_health_path(engine),
        ready_s=float(ready) if isinstance(ready, int | float) else None,
        start_budget_s=start_budget(
            float(ready) if isinstance(ready, int | float) else None,
            float(launch.get("start_timeout_s") or 300),
        ),
        model_path=str(model) if model and Path(str(model)).is_absolute() else None,
        served_model=(spec.get("model") or {}).get("name"),
        gpus=len(finger.get("gpus") or []),
        figures=figures,
    )
    return dep.with_port(port or int(launch.get("port") or default_port))
