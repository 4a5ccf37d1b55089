"""Render a :class:`Deployment` as a launch script, a systemd unit, Kubernetes or Compose.

``render(dep, target, options)`` returns ``{file name: text}``; ``write_deployment`` puts
the files in a folder. Templates are package data (``bringup/deploy/templates``). Every
secret is a reference (``"$API_KEY"``, ``${API_KEY}``, a Kubernetes Secret key, a Compose
variable); no template receives a secret value. Containers listen on 0.0.0.0: the stored
command's ``--host`` is replaced there, and the files say so.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import jinja2

from bringup import __version__
from bringup.deploy.safety import check_deployment, comment_safe
from bringup.deploy.target import ANY_ADDRESS, Deployment
from bringup.engines.base import EngineImage
from bringup.engines.registry import find_engine
from bringup.errors import BringupError
from bringup.files import replace_file
from bringup.secrets import SecretRef

Target = Literal["script", "systemd", "k8s", "compose"]
TARGETS: tuple[Target, ...] = ("script", "systemd", "k8s", "compose")
PROBE_TIMEOUT_S = 10


def engine_image(engine: str) -> EngineImage | None:
    """The engine's official images, as its folder declares them."""
    adapter = find_engine(engine)
    return adapter.image if adapter is not None else None


@dataclass
class DeployOptions:
    user: str | None = None  # systemd User=; None: see unit_user()
    uid: int = 1000  # container user
    base_image: str | None = None  # the engine image the container image is built on
    bringup_bin: str | None = None  # absolute path of bringup for the systemd unit


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bringup.deploy", "templates"),
        autoescape=False,  # shell, unit and YAML files: quoting is done by the filters below
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["shq"] = shlex.quote
    env.filters["sdq"] = systemd_quote
    env.filters["sdenv"] = systemd_env_quote
    # JSON is valid YAML; ASCII-only so no U+2028 or NEL can break a line in a YAML reader
    env.filters["yj"] = lambda v: json.dumps(v, ensure_ascii=True)
    return env


def systemd_quote(word: str) -> str:
    """One word for a unit file: ``$`` and ``%`` escaped, quoted when it has to be."""
    word = word.replace("%", "%%").replace("$", "$$")
    if word and not re.search(r'[\s"\'\\;]', word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_env_quote(assignment: str) -> str:
    """One ``Environment=`` assignment: ``%`` escaped; ``$`` is literal there (no expansion)."""
    word = assignment.replace("%", "%%")
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _bringup_bin(options: DeployOptions) -> str:
    if options.bringup_bin:
        return options.bringup_bin
    found = shutil.which("bringup")
    if found:
        return os.path.abspath(found)
    return str(Path(sys.executable).parent / "bringup")


def probe_args(dep: Deployment, url: str | None = None) -> list[str]:
    """Arguments after ``bringup``: a probe with a real generation against the server."""
    args = ["probe", url or dep.probe_url, "--timeout", str(PROBE_TIMEOUT_S)]
    if dep.health_path != "/health":
        args += ["--health-path", dep.health_path]
    key = dep.api_key_env()
    if key:
        args += ["--api-key-env", key]
    if dep.served_model:
        args += ["--model", dep.served_model]
    return args


def _container_argv(dep: Deployment, ref: str, dollar: str) -> list[str]:
    """The command inside the container; ``dollar`` escapes a literal ``$`` for the format."""
    words = dep.with_host(ANY_ADDRESS)
    if not any(w == "--host" or (isinstance(w, str) and w.startswith("--host=")) for w in words):
        words = [*words, "--host", ANY_ADDRESS]
    image = engine_image(dep.engine)
    program = image.program if image is not None else None
    first = words[0]
    assert isinstance(first, str)
    head = program or (PurePosixPath(first).name if first.startswith("/") else first)
    out = [head]
    for w in words[1:]:
        out.append(ref.format(w.env) if isinstance(w, SecretRef) else w.replace("$", dollar))
    return out


def _base_image(dep: Deployment, options: DeployOptions) -> str:
    """The engine image of the release that was proven (never a floating tag)."""
    if options.base_image:
        return options.base_image
    image = engine_image(dep.engine)
    if image is None:
        raise BringupError(
            f"bringup knows no official image for engine {dep.engine!r}; pass --image NAME."
        )
    pinned = image.pinned(dep.engine_version, gpu=bool(dep.gpus))
    if pinned is None:
        raise BringupError(
            f"the proven {dep.engine} version {comment_safe(repr(dep.engine_version))} names no "
            "release image; pass --image NAME:TAG (or NAME@sha256:...) of that exact build."
        )
    return pinned


TMP_DIRS = ("/tmp", "/var/tmp")


def _under(path: str | None, roots: tuple[str, ...]) -> bool:
    return bool(path) and any(path == r or str(path).startswith(r + "/") for r in roots)


def _readable_by_others(path: Path) -> bool:
    """Whether any user may read ``path``: o+r on it and o+x on every folder above it."""
    try:
        if not path.stat().st_mode & 0o004:
            return False
        return all(p.stat().st_mode & 0o001 for p in path.parents)
    except OSError:
        return True  # not on this machine: nothing to judge here


def unit_user(dep: Deployment, options: DeployOptions) -> tuple[str | None, str]:
    """(User= for the unit, or None for DynamicUser=yes; why), for a user that exists and
    can read the model: the one asked for, a dynamic user where the model and engine are
    readable by anyone, else the owner of the model."""
    if options.user:
        return options.user, "as asked (--user)"
    needed = [Path(p) for p in (dep.model_path, _program(dep)) if p]
    unreadable = [p for p in needed if not _readable_by_others(p)]
    if not unreadable:
        return None, "a dynamic user: the model and engine are readable by anyone"
    import pwd

    owner = unreadable[0]
    try:
        name = pwd.getpwuid(owner.stat().st_uid).pw_name
    except (KeyError, OSError):
        return None, f"a dynamic user ({owner} may not be readable: check it)"
    return name, f"the owner of {owner}, which only it may read (or pass --user)"


def _program(dep: Deployment) -> str | None:
    first = dep.argv[0] if dep.argv else None
    return first if isinstance(first, str) and first.startswith("/") else None


def _context(dep: Deployment, options: DeployOptions) -> dict[str, Any]:
    model_dir = str(PurePosixPath(dep.model_path).parent) if dep.model_path else None
    if dep.model_path and Path(dep.model_path).is_dir():
        model_dir = dep.model_path
    # what only comments show keeps its control characters spelled out, never raw
    shown = dataclasses.replace(
        dep,
        engine=comment_safe(dep.engine),
        engine_version=comment_safe(dep.engine_version),
        host=comment_safe(dep.host),
        run_id=comment_safe(dep.run_id),
        trial_id=comment_safe(dep.trial_id),
    )
    return {
        "dep": shown,
        "model_dir_comment": comment_safe(model_dir),
        "user": options.user,
        "uid": options.uid,
        "model_dir": model_dir,
        "probe_timeout": PROBE_TIMEOUT_S,
        "secret_name": f"{dep.name}-secrets",
        "image": f"{dep.name}:bringup",
        "version": __version__,
        "env_file": f"/etc/bringup/{dep.name}.env",
        "wheel": f"bringup-{__version__}-py3-none-any.whl",
    }


def render(dep: Deployment, target: Target, options: DeployOptions | None = None) -> dict[str, str]:
    opts = options or DeployOptions()
    check_deployment(dep, target, opts.user, opts.base_image)
    env = _env()
    ctx = _context(dep, opts)
    if target == "script":
        host_words = [
            f'"${w.env}"' if isinstance(w, SecretRef) else shlex.quote(w) for w in dep.argv
        ]
        probe_opts = shlex.join(probe_args(dep)[2:])
        text = env.get_template("script.sh.j2").render(
            ctx, host_words=host_words, probe_opts=probe_opts
        )
        return {f"{dep.name}.sh": text}
    if target == "systemd":
        exec_start = " ".join(
            f"${{{w.env}}}" if isinstance(w, SecretRef) else systemd_quote(w) for w in dep.argv
        )
        bringup_bin = _bringup_bin(opts)
        probe = shlex.join([bringup_bin, *probe_args(dep)])
        post = f"until {probe} >/dev/null 2>&1; do sleep 2; done"
        user, why_user = unit_user(dep, opts)
        program = _program(dep)
        read_only = sorted(
            {str(PurePosixPath(p).parent) for p in (dep.model_path, program) if p}
            | ({ctx["model_dir"]} if ctx["model_dir"] else set())
        )
        text = env.get_template("systemd.service.j2").render(
            ctx,
            exec_start=exec_start,
            post_script=post,
            user=user,
            why_user=why_user,
            # a model (or engine) under /tmp is not in a private /tmp: keep the real one
            private_tmp=not any(_under(p, TMP_DIRS) for p in (*read_only, bringup_bin)),
            read_only=read_only,
        )
        files = {f"{dep.name}.service": text}
        if dep.secret_env:
            files[f"{dep.name}.env.example"] = (
                f"# copy to {ctx['env_file']} (chmod 600) and fill in; never commit it\n"
                + "".join(f"{n}=\n" for n in dep.secret_env)
            )
        return files
    local = f"http://127.0.0.1:{dep.port}"
    probe_argv = ["bringup", *probe_args(dep, local)]
    ctx["probe_argv"] = probe_argv
    dockerfile = env.get_template("Dockerfile.j2").render(ctx, image_base=_base_image(dep, opts))
    if target == "k8s":
        ctx["container_argv"] = _container_argv(dep, "$({})", "$$")
        # Kubernetes expands $(VAR) in env values too; $$ keeps a literal $
        ctx["dep_env"] = {k: v.replace("$", "$$") for k, v in dep.env.items()}
        ctx["startup_failures"] = max(1, math.ceil(dep.start_budget_s / 10))
        text = env.get_template("k8s.yaml.j2").render(ctx)
        return {f"{dep.name}.k8s.yaml": text, "Dockerfile": dockerfile}
    if target == "compose":
        ctx["container_argv"] = _container_argv(dep, "${{{}}}", "$$")
        ctx["dep_env"] = {k: v.replace("$", "$$") for k, v in dep.env.items()}
        # Compose interpolates ${VAR} everywhere in the file, the healthcheck included
        ctx["probe_argv"] = [w.replace("$", "$$") for w in probe_argv]
        text = env.get_template("compose.yaml.j2").render(ctx)
        return {"compose.yaml": text, "Dockerfile": dockerfile}
    raise BringupError(f"unknown deployment target {target!r}; use one of {', '.join(TARGETS)}.")


def write_deployment(
    dep: Deployment, target: Target, out_dir: str | Path, options: DeployOptions | None = None
) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render(dep, target, options).items():
        # a symlink planted at the path is replaced, never written through or chmodded
        written.append(replace_file(out / name, text, 0o755 if name.endswith(".sh") else 0o644))
    return written
