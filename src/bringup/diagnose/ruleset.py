"""Which rule sets apply to which engine.

The rule sets come from the engine registry: each adapter names its own (Ollama's adds
llama.cpp's, which it embeds). A known engine gets the generic rules plus its own. An
unknown engine, or one without rules of its own (the generic ``command`` engine), gets every
set: the texts are distinctive enough that one engine's rules rarely fire on another's log.
The engine-independent sets (generic texts and the general ladder) come first for every
engine. ``ALL`` (every set by engine) is computed from the registry when read.
"""

from __future__ import annotations

from bringup.diagnose import ladder, rules_generic
from bringup.diagnose.rule import RuleSet
from bringup.verdict import Category

# the engine-independent sets, applied to every log before the engine's own
EVERY_ENGINE: tuple[RuleSet, ...] = (rules_generic.RULES, ladder.RULES)

GENERIC_REMEDIES: dict[Category, str] = {
    Category.OOM_GPU: "lower the memory fraction, the maximum number of sequences or the "
    "context length; or spread the model over more GPUs",
    Category.OOM_HOST: "the kernel OOM killer ended the engine: lower host memory use (smaller "
    "batches, no CPU offload/swap, fewer workers) or add RAM",
    Category.PORT_IN_USE: "another process holds the port: stop it or let bringup pick a free port",
    Category.MISSING_DEPENDENCY: "install the missing or matching package version",
    Category.DISTRIBUTED_FAILURE: "check the GPU interconnect and network between ranks "
    "(NCCL_DEBUG=INFO, NCCL_P2P_DISABLE=1, disable custom all-reduce)",
    Category.MODEL_LOAD_FAILURE: "check the model path or name, access rights and that the "
    "files are complete",
    Category.MODEL_INCOMPATIBLE: "use a model/checkpoint format this engine version supports, or "
    "a newer engine",
    Category.UNSUPPORTED_HARDWARE: "choose a backend or build known to support this GPU",
    Category.RUNTIME_CRASH: "rerun with CUDA_LAUNCH_BLOCKING=1 to locate the failing kernel, "
    "then try without the last changed backend flag",
    Category.INVALID_CONFIG: "drop or change the flag the message names",
    Category.GARBAGE_OUTPUT: "compare with a conservative configuration (unquantized KV cache, "
    "default attention backend) to find the flag that breaks the output",
}


# The keyword gate: a line with none of these words (lower-cased) is read only by rules whose
# literal text it holds (``LiteralIndex``), so rules without such text skip the thousands of
# ordinary lines of a log; test_diagnose_gate pins that every line a rule matches in the
# corpora passes the gate, and that a rule's own text is enough where it does not.
TRIGGERS: tuple[str, ...] = (
    "error",
    "fail",
    "fault",
    "exception",
    "traceback",
    "memory",
    "kill",
    "oom",
    "abort",
    "assert",
    "support",
    "invalid",
    "unknown",
    "unrecognized",
    "ambiguous",
    "cannot",
    "can't",
    "could not",
    "couldn't",
    "unable",
    "not found",
    "no such",
    "does not",
    "mismatch",
    "incompatib",
    "timeout",
    "timed out",
    "in use",
    "nccl",
    "cuda",
    "hip",
    "sig",
    "panic",
    "usage:",
    "requir",
    "must",
    "should",
    "only",
    "divisible",
    "not valid",
    "larger than",
    "greater than",
    "exceed",
    "gated",
    "401",
    "403",
    "repo",
    "capability",
    "sm_",
    "sm ",
    "!!!!!!!!",
    "<unk>",
    "<pad>",
    "\ufffd",
    "output",
    "response",
    "completion",
    "assistant",
    "generated",
    "gibberish",
    "garbled",
    "garbage",
    "nonsense",
    "incoherent",
    "repeat",
    "import",
    "module",
    "shared",
    "symbol",
    "glibc",
    "dll",
    "install",
    "version",
    "ptx",
    "profiled",
    "watchdog",
    "health check",
    "exiting",
    "bind",
    "addrinuse",
    "errno",
    "address",
    "params_dict",
    "architecture",
    "tokenizer",
    "tensor",
    "magic",
    "gguf",
    "manifest",
    "pull",
    "illegal",
    "misaligned",
    "launch",
    "core dumped",
    "terminate",
    "bus error",
    "capture",
    "gloo",
    "connection",
    "rendezvous",
    "tcpstore",
    "socket",
    "actor",
    "not enough",
    "no available",
    "cache",
    "max_model_len",
    "max_total",
    "alloc",
    "enomem",
    "compiler",
    "cuda_home",
    "nvcc",
    "driver",
    "kernel",
    "device",
    "library",
    "killed",
    "flash",
    "split_mode",
    "n_batch",
    "argument",
    "value",
    "quantiz",
    "model",
    "engine",
    "serializ",
    "mpi",
    "not a local",
    "safetensor",
    "header",
    "truncated",
    "end of file",
    "load key",
    "size mismatch",
    "recogni",
    "head_dim",
    "lora_rank",
    "num_heads",
    "head_size",
    "hidden_size",
    "fatal",
    "port",
    "winerror",
    "please",
    "runner",
    "scheduler",
    "sigquit",
    "warmup",
    "backend",
    "config",
    "metadata",
    "hfvalidation",
    "tensorrt",
    "ggml",
    "mlock",
    "dtype",
    "bfloat16",
    "bf16",
    "minimum",
    "heads",
    # the general ladder (diagnose/ladder.py)
    "exit status",
    "0xc0",
    "status_",
    "violation",
    "hang",
    "stuck",
    "waiting for",
    "taken more than",
    "never",
    "shard",
    "died",
    "unexpectedly",
    "attribute",
    "flag",
    "longer than",
    "context length",
    "too long",
    "eaddrnotavail",
    "world",
    "state_dict",
    "prefill",
    "+0x",
    "_assert",
    "shape",
    "3221225781",
    "exited",
    "exit code",
    "deadline",
    "input should",
    "extra inputs",
    "ordinal",
    "resource",
    # the families of signals_launch / signals_runtime that name no error word
    "eof",
    "exitcode",
    "template",
    "implement",
    "hung",
    "froze",
    "blocked for",
    "allowed",
    "trap",
)


def _own(engine: str | None) -> tuple[RuleSet, ...] | None:
    """The engine's own rule sets; None when it brings none (or is unknown)."""
    from bringup.engines.registry import find_engine

    adapter = find_engine(engine)
    return adapter.rules if adapter is not None and adapter.rules else None


def engine_rulesets() -> tuple[RuleSet, ...]:
    """Every engine's rule sets once, in registration order."""
    from bringup.engines.registry import adapters

    seen: dict[int, RuleSet] = {}
    for adapter in adapters():
        for rs in adapter.rules:
            seen.setdefault(id(rs), rs)
    return tuple(seen.values())


def rulesets_for(engine: str | None) -> tuple[RuleSet, ...]:
    return (*EVERY_ENGINE, *(_own(engine) or engine_rulesets()))


def engine_remedy(engine: str | None, category: Category) -> str | None:
    for rs in _own(engine) or ():
        if category in rs.remedies:
            return rs.remedies[category]
    return GENERIC_REMEDIES.get(category)


def __getattr__(name: str) -> dict[str, RuleSet]:
    if name == "ALL":
        every = {rs.engine: rs for rs in EVERY_ENGINE}
        return {**every, **{rs.engine: rs for rs in engine_rulesets()}}
    raise AttributeError(name)
