"""The ladder's limits half: a value outside what the engine can hold, named by what refused it.

Two families of refused settings that no argument parser catches at start-up:

- a port outside 0-65535: the socket layer refuses it when the server binds (Python's
  ``OverflowError: bind(): port must be 0-65535``, "port out of range"), long after the
  flag was parsed;
- a context smaller than the work it is given, as llama.cpp's server and its bindings say it
  while they serve: no KV slot for the batch, a context size exceeded, context shifting
  switched off (``--no-context-shift``) or not possible for the model's attention (a
  model that "does not support K-shift"): the context (or the slots it is split into) is
  set too small for the requests.

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

RULES: tuple[Rule, ...] = (
    rule(
        r"\bport (?:number )?must be (?:in (?:the range )?|between )?0 ?(?:-|\.\.|and|to) ?65535\b|"
        r"\bport (?:number )?(?:\d+ )?(?:is )?out of (?:the )?(?:valid )?range\b|"
        r"\binvalid port (?:number )?:? ?['\"]?\d{6,}",
        C.INVALID_CONFIG,
        5,
        "the port is outside 0-65535: pass a port number in range (--port)",
        name="port-out-of-range",
        flags=("--port",),
    ),
    rule(
        r"\bcould not find a KV slot for the batch\b|"
        r"\bfailed to find (?:a )?(?:free )?(?:KV|memory) slot for (?:the )?batch\b|"
        r"\bcontext size has been exceeded\b|"
        r"\bcontext[- ]shift is disabled\b|"
        r"\bdoes not support K-shift\b",
        C.INVALID_CONFIG,
        4,
        "the context (per slot: -c divided by the parallel slots -np) is too small for the "
        "requests: raise -c (--ctx-size), lower -np or the batch, or keep context shifting on",
        name="context-too-small-for-the-work",
        flags=("--ctx-size", "-c", "--parallel", "-np"),
    ),
)
