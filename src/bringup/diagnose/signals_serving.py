"""The ladder's serving half: failures while the engine answers requests, not while it starts.

A server that started can still fail per request, and says so in a request's error:

- a request that "failed during generation" with a server error (the shard or worker that
  generated raised): a crash mid-generation, whatever the message after it (a specific
  cause, out of memory for one, is read by its own rule and outweighs this);
- a KV cache too small to hold a single sequence ("must be large enough to process at
  least 1 sequence"): the memory left for the cache, as vLLM's own check says it;
- collective communication that timed out, in a poster's words ("NCCL communication
  timeout", "NCCL timed out"): the ranks, as a watchdog's message would say;
- an engine step that did not return in time (vLLM's "Engine iteration timed out"): the
  engine hung mid-serving, whatever it raised after;
- a KV cache the decode side could not fetch from the prefill side (disaggregated serving,
  Mooncake and NIXL transfers): the link between the instances, not the text; so is an
  error of the transport under them (UCX's own ``UCX ERROR`` lines, NIXL's ``NIXL_ERR_``
  codes), whatever resource it names ("Out of memory" there is the NIC's, not the GPU's);
- an engine that dumps the inputs of the step that crashed (vLLM's ``dump_input``): a crash;
- a tool call the server could not parse out of the model's text: the model's output.

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
    rule(
        # UCX pads its level ("UCX  ERROR"); spelled out, the literals gate the rule
        r"\bUCX  ?(?:ERROR|FATAL)\b|\bNIXL_ERR_(?!NOT_SUPPORTED)[A-Z_]+\b",
        C.DISTRIBUTED_FAILURE,
        5.5,  # above the "Out of memory" a UCX line may carry
        "the transport between the instances failed (UCX/NIXL): check that both reach each "
        "other over the chosen network devices (UCX_NET_DEVICES, UCX_TLS) and that RDMA "
        "resources are free",
        name="transport-error-between-instances",
    ),
    rule(
        r"\bEngine iteration timed out\b|\bengine (?:step|iteration) (?:has )?timed out\b",
        C.STARTUP_TIMEOUT_OR_HANG,
        4,
        "an engine step did not return in time: the engine hung while serving (a stuck "
        "collective, a kernel that never returns); run with one GPU or eager mode to find "
        "the part that hangs, or raise the iteration timeout for very slow steps",
        name="engine-iteration-timed-out",
    ),
    rule(
        r"\bKVTransferError\b|\b(?:Decode|Prefill|KV(?: ?cache)?) transfer failed\b|"
        r"\bFailed to (?:get|fetch|receive|send) (?:the )?kv ?cache (?:from|to) (?:the )?"
        r"(?:prefill|decode)\b",
        C.DISTRIBUTED_FAILURE,
        4,
        "the KV cache could not move between the prefill and decode instances: check that "
        "both are alive and reach each other over the transfer backend (Mooncake, NIXL, "
        "the RDMA devices and ports it uses)",
        name="kv-transfer-between-instances-failed",
    ),
    rule(
        r"\bDumping input data for (?:V1 )?LLM engine\b",
        C.RUNTIME_CRASH,
        2.2,
        "the engine crashed on a step and dumped its inputs: the exception after the dump "
        "names the cause; retry without the last changed flag or request feature",
        name="engine-dumped-crashing-step",
    ),
    rule(
        r"\btool[_ ]?call\w* (?:parsing|parse) failed\b|"
        r"\b(?:failed|unable) to parse (?:the )?tool[_ ]?calls?\b|"
        r"\bError in extracting tool call\b",
        C.GARBAGE_OUTPUT,
        3,
        "the model's text did not hold a tool call the parser could read: use the tool "
        "parser and chat template meant for this model, or a model tuned for tool calls",
        name="tool-call-not-parsed-from-output",
    ),
)
