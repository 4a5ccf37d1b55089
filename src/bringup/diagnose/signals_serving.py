"""The ladder's serving half: failures while the engine answers requests, not while it starts.

A server that started can still fail per request, and says so in a request's error:

- a request that "failed during generation" with a server error (the shard or worker that
  generated raised): a crash mid-generation, whatever the message after it (a specific
  cause, out of memory for one, is read by its own rule and outweighs this);
- a KV cache too small to hold a single sequence ("must be large enough to process at
  least 1 sequence"): the memory left for the cache, as vLLM's own check says it;
- collective communication that timed out, in a poster's words ("NCCL communication
  timeout", "NCCL timed out"): the ranks, as a watchdog's message would say.

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

RULES: tuple[Rule, ...] = (
    rule(
        r"\bRequest failed during generation: Server error\b",
        C.RUNTIME_CRASH,
        2.4,
        "a request crashed the model server while it generated: the server's own log at "
        "that time names the exception; retry without the last changed flag or batch size",
        name="request-failed-during-generation",
    ),
    rule(
        r"\b(?:KV ?cache|\w*KvCache\w*|cache blocks?)\b[^.\n]{0,60}?\b(?:must be large enough|"
        r"(?:is )?too small|not enough|insufficient)\b[^.\n]{0,40}?\b(?:at least )?(?:one|1|a "
        r"single) (?:sequence|request)\b",
        C.OOM_GPU,
        4,
        "the memory left for the KV cache does not hold one sequence: raise the GPU memory "
        "fraction (or the KV cache share), lower the maximum sequence length, or use more GPUs",
        name="kv-cache-below-one-sequence",
    ),
    rule(
        r"\bNCCL\b(?: [\w-]+){0,2} (?:timed out|time ?outs? (?:occur\w*|happen\w*|errors?)|"
        r"time ?outs? (?:again|every|after|while|during))\b|"
        r"\btime(?:d)? ?out\b[^.\n]{0,20}?\bNCCL (?:communication|collective|all-?reduce)",
        C.DISTRIBUTED_FAILURE,
        2.2,
        "a collective between the ranks timed out: one rank stopped (hung, crashed or slow) "
        "or the link between them failed; NCCL_DEBUG=INFO and each rank's log show which",
        name="collective-timed-out-in-words",
    ),
)
