"""What an engine was doing when its log went silent.

``stage_reached(lines)`` names the last start-up phase the log shows (downloading, connecting
to peers, loading weights, allocating the KV cache, compiling, capturing CUDA graphs, warming
up, starting the HTTP server). ``diagnose_hang`` turns that into a
``startup_timeout_or_hang`` diagnosis whose evidence is the last lines before the silence.
The readiness loop calls it when the start timeout or the no-progress timer fires.
"""

from __future__ import annotations

import re

from bringup.diagnose.diagnosis import Diagnosis
from bringup.diagnose.logtext import content, dedupe_key, log_lines, nonblank, redact
from bringup.verdict import Category

# (phase, markers, remedy); order matters only for lines matching several phases
_PHASES: list[tuple[str, re.Pattern[str], str]] = [
    (
        "capturing CUDA graphs",
        re.compile(r"cuda ?graph|cudagraph|Capturing batches|graph capturing", re.I),
        "capture stalled: disable CUDA graphs (--disable-cuda-graph / --enforce-eager) or "
        "custom all-reduce (--disable-custom-all-reduce), or lower the captured batch sizes",
    ),
    (
        "compiling (torch.compile / JIT kernels)",
        re.compile(
            r"torch\.compile|dynamo|inductor|Compiling (?:a graph|model|kernels?)|"
            r"compile range|JIT compil|building (?:the )?engine|nvcc|ninja",
            re.I,
        ),
        "compilation can take many minutes on first start: raise the start timeout, or "
        "disable torch.compile / warm the compile cache",
    ),
    (
        "warming up",
        re.compile(r"warm ?up|warming up|dummy run|profile run|memory profiling", re.I),
        "warm-up stalled: try without CUDA graphs or with a smaller max batch",
    ),
    (
        "allocating the KV cache",
        re.compile(
            r"KV ?cache|kv_cache|memory pool|init_memory_pool|cache blocks|"
            r"max_total_num_tokens|llama_context:",
            re.I,
        ),
        "raise the start timeout, or lower the KV cache size to see whether allocation stalls",
    ),
    (
        "loading weights",
        re.compile(
            r"load(?:ing)? weights?|Load weight|checkpoint shards|load_tensors|"
            r"loading model|model_loader|safetensors|Loading model|llama_model_load|"
            r"loading \d+ tensors|Load weight begin",
            re.I,
        ),
        "weights load slowly from this storage: raise the start timeout, pre-load the files "
        "to local disk, or check the storage is not stalled",
    ),
    (
        "connecting to peers (distributed init)",
        re.compile(
            r"Connecting to tcp://|NCCL INFO|init_distributed|distributed_init_method|"
            r"world_size=\d+|rendezvous|TCPStore|process group|Init torch distributed|"
            r"gloo|nccl|custom all-?reduce|\bMPI\b",
            re.I,
        ),
        "ranks are waiting for each other: check NCCL (NCCL_DEBUG=INFO, NCCL_P2P_DISABLE=1, "
        "NCCL_IB_DISABLE=1), the interface and IPv4/IPv6 of --dist-init-addr, and that all "
        "ranks started",
    ),
    (
        "downloading the model",
        re.compile(
            r"Downloading|download(?:ing)? (?:model|weights|shards)|Fetching \d+ files|"
            r"pulling manifest|pulling [0-9a-f]{6,}",
            re.I,
        ),
        "pre-download the model or raise the start timeout",
    ),
    (
        "starting the HTTP server",
        re.compile(
            r"Uvicorn running|Started server process|Waiting for application startup|"
            r"Starting \w+ API server|HTTP server is listening|listening on|"
            r"server is listening|Application startup complete|fired up and ready",
            re.I,
        ),
        "the server started but did not answer health checks: check the port, a proxy, or "
        "the health endpoint the adapter polls",
    ),
]

_TAIL = 6


def stage_reached(lines: list[str], engine: str | None = None) -> tuple[str | None, str | None]:
    """(phase, remedy) of the last line that names a start-up phase; (None, None) if none.

    An engine with its own phase table (its RuleSet's ``phases``) is read with that table
    alone when any of its phases shows; the generic markers are the fallback."""
    from bringup.diagnose.ruleset import _own

    phases = [p for rs in (_own(engine) or ()) if engine for p in rs.phases]
    if phases:
        for raw in reversed(lines):
            text = content(raw)
            for phase, marker, remedy in phases if text else ():
                if marker.search(text):
                    return phase, remedy or None
    for raw in reversed(lines):
        text = content(raw)
        if not text:
            continue
        for phase, marker, remedy in _PHASES:
            if marker.search(text):
                return phase, remedy
    return None, None


def diagnose_hang(
    text: str, engine: str | None = None, *, silent_s: float | None = None
) -> Diagnosis:
    """A ``startup_timeout_or_hang`` diagnosis: last lines before silence and the phase."""
    lines = nonblank(log_lines(text))
    phase, remedy = stage_reached(lines[-200:], engine)
    tail: list[str] = []
    keys: set[str] = set()
    for raw in reversed(lines[-50:]):  # the last distinct lines (ranks repeat each other)
        key = dedupe_key(raw)
        if key not in keys:
            keys.add(key)
            tail.insert(0, redact(raw.rstrip()))
        if len(tail) >= _TAIL:
            break
    if phase:
        tail.insert(0, f"stage reached: {phase}")
    if not tail:
        tail = ["(the engine printed nothing)"]
        remedy = "the engine printed nothing: check that the command starts at all and logs"
    confidence = 0.6 if phase else 0.4
    return Diagnosis(
        Category.STARTUP_TIMEOUT_OR_HANG,
        tail,
        remedy or "raise the start timeout or look at what the engine does at that point",
        confidence,
        stage_reached=phase,
        silent_s=silent_s,
        rule=f"hang:{phase}" if phase else "hang:no-phase-seen",
    )
