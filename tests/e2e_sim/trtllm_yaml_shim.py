"""Stand-in for ``trtllm-serve``: read the LLM-API YAML, then run the simulated engine.

trtllm-serve takes backend and precision options in the file passed with ``--config``;
the simulated engine's world names them as dotted flags (``--config.attn_backend``). This
reads the file the adapter wrote (JSON text, which YAML reads) and passes each leaf as
``--config.<path> VALUE``, so a world sees exactly what the engine would have read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bringup.testing.simengine.__main__ import main


def _leaves(tree: dict[str, Any], prefix: str = "--config") -> list[str]:
    argv: list[str] = []
    for key, value in tree.items():
        flag = f"{prefix}.{key}"
        if isinstance(value, dict):
            argv += _leaves(value, flag)
        else:
            argv += [flag, str(value)]
    return argv


def expand(argv: list[str]) -> list[str]:
    """``--config FILE`` (or ``--config=FILE``) replaced by the file's leaves as flags."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        path = None
        if tok == "--config" and i + 1 < len(argv):
            path, i = argv[i + 1], i + 2
        elif tok.startswith("--config="):
            path, i = tok.split("=", 1)[1], i + 1
        else:
            out.append(tok)
            i += 1
            continue
        out += _leaves(json.loads(Path(path).read_text(encoding="utf-8")))
    return out


if __name__ == "__main__":
    sys.exit(main(expand(sys.argv[1:])))
