"""Version and hardware fingerprint of a Python-based engine, read without starting it.

:func:`python_fingerprint` runs the engine's own interpreter (found from ``python -m``
prefixes or the console script's shebang) to read package versions from metadata and the
torch build (version, CUDA) from ``torch/version.py`` without importing torch.
:func:`gpu_facts` asks ``nvidia-smi`` for GPU name, compute capability, driver and memory.
Both answer an empty dict when there is nothing to ask; results are cached per process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

_SCRIPT = r"""
import importlib.metadata as md, importlib.util, json, pathlib, re, sys
out = {"python": sys.version.split()[0]}
for dist in sys.argv[1:]:
    try:
        out[dist] = md.version(dist)
    except Exception:
        pass
spec = importlib.util.find_spec("torch")
if spec is not None and spec.origin:
    path = pathlib.Path(spec.origin).with_name("version.py")
    text = path.read_text() if path.exists() else ""
    for key, name in (("__version__", "torch"), ("cuda", "torch_cuda"), ("hip", "torch_hip")):
        m = re.search(r"^" + key + r"\s*(?::[^=]*)?=\s*'([^']*)'", text, re.M)
        if m:
            out[name] = m.group(1)
print(json.dumps(out))
"""


def python_of(argv: Sequence[str]) -> str | None:
    """The interpreter behind an engine command line, if it is a Python program."""
    if not argv:
        return None
    exe = argv[0]
    if Path(exe).name.startswith("python"):
        return shutil.which(exe) or exe
    resolved = shutil.which(exe) or exe
    try:
        with open(resolved, "rb") as fh:
            head = fh.read(512).decode("utf-8", "replace")
    except OSError:
        return None
    first = head.splitlines()[0] if head else ""
    if first.startswith("#!") and "python" in first:
        return first[2:].strip().split()[0]
    # pip writes a /bin/sh trampoline when the interpreter path is too long for a shebang
    m = re.search(r"'''exec' (\S+python\S*)", head)
    return m.group(1) if m else None


@lru_cache(maxsize=16)
def _run_fingerprint(python: str, dists: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    try:
        proc = subprocess.run(
            [python, "-c", _SCRIPT, *dists],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        data = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in data.items()))


def python_fingerprint(argv: Sequence[str], dists: Sequence[str]) -> dict[str, str]:
    """Versions of ``dists``, Python and torch in the engine's interpreter."""
    python = python_of(argv)
    if python is None:
        return {}
    return dict(_run_fingerprint(python, tuple(dists)))


@lru_cache(maxsize=4)
def _nvidia_smi() -> tuple[tuple[str, ...], ...]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ()
    query = "index,name,compute_cap,driver_version,memory.total"
    try:
        proc = subprocess.run(
            [smi, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    rows = [tuple(c.strip() for c in line.split(",")) for line in proc.stdout.splitlines()]
    return tuple(r for r in rows if len(r) == 5)


def gpu_facts(gpus: Sequence[int] | None = None) -> dict[str, str]:
    """GPU name, compute capability, driver and memory of the GPUs the engine will use."""
    rows = list(_nvidia_smi())
    if gpus is None and os.environ.get("CUDA_VISIBLE_DEVICES", "").replace(",", "").isdigit():
        gpus = [int(i) for i in os.environ["CUDA_VISIBLE_DEVICES"].split(",")]
    if gpus is not None:
        rows = [r for r in rows if r[0].isdigit() and int(r[0]) in set(gpus)]
    if not rows:
        return {}
    names = sorted({r[1] for r in rows})
    return {
        "gpu_name": " + ".join(names),
        "gpu_count": str(len(rows)),
        "compute_capability": ",".join(sorted({r[2] for r in rows})),
        "driver": rows[0][3],
        "gpu_memory_mib": rows[0][4],
    }
