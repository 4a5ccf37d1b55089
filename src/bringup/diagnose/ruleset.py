"""Which rule sets apply to which engine.

A known engine gets the generic rules plus its own (Ollama also gets llama.cpp's, which it
embeds). An unknown engine, or the generic ``command`` engine, gets every set: the texts are
distinctive enough that one engine's rules rarely fire on another's log.
"""

from __future__ import annotations

from functools import cache

from bringup.diagnose import (
    ladder,
    rules_generic,
    rules_llamacpp,
    rules_ollama,
    rules_sglang,
    rules_trtllm,
    rules_vllm,
)
from bringup.diagnose.logtext import engine_key
from bringup.diagnose.rule import RuleSet
from bringup.verdict import Category

ALL: dict[str, RuleSet] = {
    "generic": rules_generic.RULES,
    "ladder": ladder.RULES,
    "llama.cpp": rules_llamacpp.RULES,
    "sglang": rules_sglang.RULES,
    "vllm": rules_vllm.RULES,
    "trtllm": rules_trtllm.RULES,
    "ollama": rules_ollama.RULES,
}

_EVERY_ENGINE = ("generic", "ladder")  # the engine-independent sets

_OWN: dict[str, tuple[str, ...]] = {
    "llama.cpp": ("llama.cpp",),
    "ollama": ("ollama", "llama.cpp"),
    "sglang": ("sglang",),
    "vllm": ("vllm",),
    "trtllm": ("trtllm",),
}

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


# Every rule needs one of these words in the line (lower-cased). Checking them first skips
# the rules on the thousands of ordinary lines of a log; test_diagnose_gate pins that every
# line a rule matches in the corpora also passes the gate.
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
)


@cache
def rulesets_for(engine: str | None) -> tuple[RuleSet, ...]:
    key = engine_key(engine)
    names = _OWN.get(key or "", tuple(n for n in ALL if n not in _EVERY_ENGINE))
    return (*(ALL[n] for n in _EVERY_ENGINE), *(ALL[n] for n in names))


def engine_remedy(engine: str | None, category: Category) -> str | None:
    key = engine_key(engine)
    for name in _OWN.get(key or "", ()):
        if category in ALL[name].remedies:
            return ALL[name].remedies[category]
    return GENERIC_REMEDIES.get(category)
