"""Is this one log line a sign the launch has already failed?

Runs on every line during readiness, so it is one precompiled regex search per line.
It answers True only for lines engines print when they are about to die: llama.cpp's
``error:`` lines and ``exiting due to``, argparse errors, CUDA OOM and CUDA errors, NCCL
errors, a busy port, the engines' own "failed to start" lines. Benign start-up text that
merely contains the word "error" (parameter lists, ``error_handler`` names, log levels of
warnings) does not match.
"""

from __future__ import annotations

import re
from functools import cache

from bringup.diagnose.logtext import engine_key

_COMMON = [
    r"CUDA out of memory",
    r"OutOfMemoryError",
    r"CUDA error: ",
    r"cudaMalloc failed",
    r"no kernel image is available",
    r"illegal memory access",
    r"NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError",
    r"Address already in use|EADDRINUSE",
    r": error: (?:unrecognized arguments|argument |ambiguous option|the following arguments)",
    r"^Killed$",
    r"Segmentation fault|core dumped|terminate called after throwing",
]

_BY_ENGINE: dict[str, list[str]] = {
    "llama.cpp": [
        r"exiting due to",
        r"(?:^|: )error: ",  # llama.cpp reports fatal problems as "<func>: error: ..." lines
        r"^error while handling argument",
        r"couldn't bind HTTP server socket",
        r"GGML_ASSERT\(",
        r"\.cu:\d+: CUDA error$",  # ggml-cuda's abort line; the reason follows it
        r"failed to allocate \w+ buffer|unable to allocate \w+ buffer",
    ],
    "sglang": [
        r"Scheduler hit an exception",
        r"Received sigquit from a child process",
        r"Initialization failed\. warmup error",
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        r"Capture cuda graph failed",
    ],
    "vllm": [
        r"Engine core initialization failed",
        r"EngineCore failed to start|WorkerProc failed to start",
        r"EngineDeadError",
        r"No available memory for the cache blocks",
        r"KV cache is needed, which is larger than the available KV cache memory",
    ],
    "trtllm": [
        r"\[TensorRT-LLM\]\[ERROR\]",
        r"MPI_ABORT was invoked",
    ],
    "ollama": [
        r"llama runner process has terminated",
        r"error loading llama server",
        r"^panic: ",
        r"level=ERROR .*msg=\"error loading",
    ],
}
_BY_ENGINE["ollama"] = _BY_ENGINE["ollama"] + _BY_ENGINE["llama.cpp"][:2]


@cache
def _pattern(key: str | None) -> re.Pattern[str]:
    parts = list(_COMMON)
    if key in _BY_ENGINE:
        parts += _BY_ENGINE[key]
    elif key in (None, "command"):
        for extra in _BY_ENGINE.values():
            parts += extra
    return re.compile("|".join(f"(?:{p})" for p in parts), re.MULTILINE)


_LEVEL = re.compile(r"^(?:\[\d+\] )?(?:\d+(?:\.\d+)+ )?[IWED] ")


def fatal_line(line: str, engine: str | None = None) -> bool:
    """True when the line alone shows the launch has failed."""
    text = _LEVEL.sub("", line.strip(), count=1)
    return _pattern(engine_key(engine)).search(text) is not None
