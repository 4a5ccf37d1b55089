"""The hardware and software a verdict holds for.

A verdict is only reusable on the same fingerprint: CPU model and cores, GPUs (name,
compute capability, driver) where present, the engine and its version, the model file.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bringup.engines.base import EngineAdapter
    from bringup.spec import Spec


@lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@lru_cache(maxsize=1)
def gpus() -> list[dict[str, str]]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run(
            [
                smi,
                "--query-gpu=name,compute_cap,driver_version,memory.total",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=15,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in out.strip().splitlines():
        name, cap, driver, mem = (p.strip() for p in line.split(",")[:4])
        rows.append({"name": name, "compute_capability": cap, "driver": driver, "memory": mem})
    return rows


_SHA_CACHE: dict[tuple[str, int, float], str] = {}


def file_sha256(path: str) -> str | None:
    p = Path(path)
    if not p.is_file():
        return None
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime)
    if key not in _SHA_CACHE:
        digest = hashlib.sha256()
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _SHA_CACHE[key] = digest.hexdigest()
    return _SHA_CACHE[key]


def executable_sha256(program: str) -> str | None:
    """Content hash of an executable and the shared libraries beside it.

    llama-server's executable is a thin launcher; its code lives in ``libllama*.so`` and
    ``libggml*.so`` next to it (found through ``$ORIGIN``). A rebuild that replaces only
    those must change the hash too. Each file's hash is cached by path, size and mtime.
    """
    found = Path(os.path.realpath(shutil.which(program) or program))
    if not found.is_file():
        return None
    files = [
        found,
        *sorted(p for p in found.parent.glob("*.so*") if p.is_file() and not p.is_symlink()),
    ]
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.name}={file_sha256(str(f))}\n".encode())
    return digest.hexdigest()


def collect(engine: str, engine_version: str, model: str | None) -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 0,
        "gpus": gpus(),
        "engine": engine,
        "engine_version": engine_version,
        "model": model,
        "model_sha256": file_sha256(model) if model else None,
    }


def engine_fingerprint(spec: Spec, adapter: EngineAdapter) -> tuple[str, dict[str, Any]]:
    """The engine's version and this machine's fingerprint for it (also taken on each node
    a placing executor runs a trial on)."""
    info = adapter.info(spec)
    finger = collect(adapter.name, info.version, spec.model.path)
    finger["engine_details"] = {k: v for k, v in info.details.items() if k != "binary"}
    # a rebuilt engine may report the same version string: its executable's content cannot
    finger["engine_sha256"] = executable_sha256(adapter.locate(spec)[0])
    return info.version, finger


def fingerprint_key(fp: dict[str, Any]) -> str:
    """Short stable id of a fingerprint (what decides whether a verdict can be reused)."""
    return hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:16]


def hardware_label(fp: dict[str, Any]) -> str:
    gpu_list = fp.get("gpus") or []
    if gpu_list:
        g = gpu_list[0]
        return f"{len(gpu_list)}x {g['name']} (sm{g['compute_capability'].replace('.', '')})"
    return f"CPU {fp.get('cpu', '?')} x{fp.get('cores', '?')}"
