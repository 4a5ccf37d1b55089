"""The ladder's message grammar: what the words of a message no specific rule knows say.

A message names *what* refused (a GPU, a capture, a parallel size, a config key) and *how*
(not supported, only supports ... got, not divisible, not found). These rules read that
pairing, whichever engine or library wrote the sentence, so that a final exception like
``RuntimeError: GPUs with compute capability less than 7.0 are not supported`` is read as
the GPU refused, not as "a RuntimeError happened":

- hardware nouns (GPU, device, compute capability, CUDA architecture, SM/sm_NN, gfx
  targets) beside a refusal: the code has no kernel for this GPU;
- work CUDA graphs cannot capture (``during CUDA graph capture``, a capture status named):
  the configuration combines graphs with an operation they cannot hold;
- a value refused by naming what is allowed and what was given (``only supports X, got Y``)
  and an assertion whose own source line checks a parallel size: a setting;
- ranks that cannot connect (c10d, NCCL's network and bootstrap layers, a master or peer
  refusing) and a cluster (Ray) that cannot place its workers: a distributed set-up;
- a JSON library's missing key inside a model's or engine's config: the file is of another
  version than the code reading it;
- a C++ runtime's abort (an unhandled exception, ``std::terminate``, a Windows abort
  handler): the process died, cause not named.

Weights sit between the named-cause rules (4-5) and the vocabulary rules of
:mod:`bringup.diagnose.signals_launch` (2-2.2): a noun and a verb are a pattern of failure,
not one project's wording, so they decide only when nothing names the cause.
"""

from __future__ import annotations

from bringup.diagnose.rule import REFUSED_ONLY, Rule, rule
from bringup.verdict import Category as C

_HW_NOUN = (
    r"\b(?:GPUs?|devices?|compute capabilit(?:y|ies)|(?:CUDA |GPU )?arch(?:itecture)?s?|"
    r"SM ?\d{2,3}\w?|sm_?\d{2,3}\w?|gfx\d{3,4}\w*|hardware|platform)\b"
)
_REFUSES = (
    r"(?:(?:is|are) not (?:yet )?supported|(?:is|are) unsupported|not (?:yet )?supported|"
    r"(?:is|are) not (?:yet )?available)"
)

# a stretch of the same sentence (a version number's dot does not end it)
_SAME_SENTENCE = r"(?:[^.;]|\.(?=\d)){0,80}?"

RULES: tuple[Rule, ...] = (
    # --- what the GPU can do --------------------------------------------------------
    rule(
        REFUSED_ONLY + r"(?:" + _HW_NOUN + _SAME_SENTENCE + r"\b" + _REFUSES + r"|"
        r"\bcompute capability (?:of |is )?(?:less|lower|below|older|smaller) than\b|"
        r"\brequires? (?:an? )?(?:GPUs?|devices?) (?:with|of) (?:compute capability|"
        r"(?:SM|sm_?) ?\d)|"
        r"\bno supported (?:CUDA |GPU |device )?arch\w* (?:were |was )?found\b|"
        r"\bonly (?:supported|available|works?|runs?) on (?:\w+ ){0,2}(?:GPUs?|"
        r"Hopper|Ampere|Ada|Blackwell|sm_?\d{2,3}|SM ?\d{2,3})\b)",
        C.UNSUPPORTED_HARDWARE,
        3,
        "the code has no kernel for this GPU: choose a backend, dtype or quantization "
        "this GPU supports, or a build for its architecture",
        name="message-gpu-refused",
    ),
    # --- what CUDA graphs cannot capture --------------------------------------------
    rule(
        r"\bduring (?:CUDA )?graph capture\b|\bcudaStreamCaptureStatus\w*|"
        r"\bwhile (?:a )?(?:CUDA )?(?:graph|stream) is (?:being )?captur",
        C.INVALID_CONFIG,
        3,
        "an operation cannot run inside a CUDA graph capture with these flags: disable "
        "torch.compile or CUDA graphs for this configuration (--enforce-eager, "
        "--disable-cuda-graph)",
        name="message-not-capturable",
        flags=("--enforce-eager", "--disable-cuda-graph", "--enable-torch-compile"),
    ),
    # --- a value refused by naming what is allowed ----------------------------------
    rule(
        r"\bonly supports? [^.;]{1,80}?,? (?:but )?got\b|"
        r"\bonly supports? [^.;]{1,60}? (?:but|while|whereas) (?:\w+ ){0,3}(?:is|was) "
        r"(?:set|given|used)\b",
        C.INVALID_CONFIG,
        2.4,
        "a setting the code refuses next to what it allows: change the flag to an allowed value",
        name="message-only-supports-got",
    ),
    # the source line of a failed assertion, shown by the traceback, checks a parallel size
    rule(
        r"^assert\b.*(?:%\s*\(?\s*\w*(?:tp|tensor_parallel|pp|pipeline_parallel|world|"
        r"dp|ep)_?\w*\s*\)?\s*==\s*0|\b\w*(?:tp|tensor_parallel|world|pp)_size\b)",
        C.INVALID_CONFIG,
        2.4,
        "the code checks a parallel size against the model's shape: choose a tensor or "
        "pipeline parallel size that divides the model's heads and layers",
        name="assert-on-parallel-size",
        flags=("--tensor-parallel-size", "--tp", "--tp-size", "--pipeline-parallel-size"),
    ),
    # --- a config file of another version than the code reading it ------------------
    rule(
        r"\[json\.exception\.[\w.]+\] key '\w+' not found",
        C.MODEL_INCOMPATIBLE,
        3,
        "the model's (or built engine's) config lacks a key this runtime reads: the files "
        "were made by another version; rebuild or convert them with this version",
        name="config-key-not-found",
    ),
    # --- ranks that cannot reach each other, a cluster that cannot place them -------
    rule(
        r"\bc10d\b[^\n]{0,160}?\b(?:fail\w*|error|timed? ?out|refused)\b|"
        r"\bclient socket has failed to connect\b|\bsocketStartConnect\b|"
        r"\bno socket interface found\b|\bNET/(?:IB|Socket|Plugin)\b.{0,160}?"
        r"\b(?:error|fail\w*|WARN)\b|\bDuplicate GPU detected\b|"
        r"\bNCCL Error \d+\b|\bunhandled system error\b|"
        r"\bconnect(?:ion)? (?:to|with) (?:the )?(?:master|head node|rank \d+|peer|"
        r"rendezvous)\b.{0,80}?\b(?:fail\w*|refused|timed? ?out)\b",
        C.DISTRIBUTED_FAILURE,
        4,
        "the ranks could not reach each other: check the network interface "
        "(NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME), the master address and port, a "
        "firewall, and that every rank started (NCCL_DEBUG=INFO names the failing link)",
        name="ranks-cannot-connect",
    ),
    rule(
        r"\bCurrent node has no GPU available\b|\bNo available node types can fulfill\b|"
        r"\bplacement group\b.{0,100}?\b(?:timed? ?out|cannot|infeasible|not (?:be )?"
        r"(?:created|ready|scheduled))|\bFailed to connect to GCS\b|"
        r"\bGCS (?:server|client)\b.{0,80}?\b(?:fail\w*|timed? ?out|unavailable)\b|"
        r"\b(?:cannot|can't|could not) (?:be )?(?:schedul\w*|fulfill\w*|satisf\w*)"
        r".{0,60}?\bresources?\b",
        C.DISTRIBUTED_FAILURE,
        3.5,
        "the cluster cannot place the workers: check that every node joined it and has the "
        "GPUs the parallel size asks for (ray status), or lower the parallel size",
        name="cluster-cannot-place-workers",
    ),
    # --- a C++ runtime's abort ------------------------------------------------------
    rule(
        r"Unhandled exception caught in|\bstd::terminate\b|"
        r"\bterminate called without an active exception|"
        r"\b(?:ucrtbase|msvcrt)\.dll!(?:terminate|abort)\b",
        C.RUNTIME_CRASH,
        2.5,
        name="cpp-runtime-abort",
    ),
)
