"""The ladder's architecture half: a GPU or accelerator named in words beside a refusal.

Reports name the hardware a build or kernel lacks in their own words as often as a runtime
prints an error code for it; the name of a target (``sm_75``, ``compute_120a``, ``gfx1032``,
``Ascend910``) next to a refusal says the code has nothing for this device:

- a generation floor: "only sm90 and higher are available", "sm_75 or lower", "9th gen
  CPUs or older", the build ships code from some target up and this device is below it;
- a lookup keyed by the target that has no entry for it (``KeyError: 'sm_75'``): a table of
  kernels or build flags without this GPU;
- support for a named device "is not implemented", and a compiled kernel's assertion
  "Unsupported architecture" (a model loader says which model class; a kernel names none);
- a title asking for a feature "on sm120" or "for gfx1151": a guess, as any title is;
- a ROCm math library's status error (``HIPBLAS_STATUS_*``) with the ``gfx`` target named
  beside it: the library has no kernels for that target.

A poster's words are guesses (weight below the classifier's cause); a key or assertion the
code raised decides. Assembled with the other ``signals_*`` modules by
:mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

# a GPU or accelerator target as builds and kernels name it
_TARGET = (
    r"(?:sm_?\d{2,3}a?|SM ?\d{2,3}a?|compute_\d{2,3}a?|gfx\d{3,4}[a-z]?|"
    r"compute capability \d\.\d|cc ?\d\.\d)"
)
_BUILD = (
    "the build has no code for this device's architecture: a build (wheel, image, kernel "
    "package) compiled for it, or a device the release supports"
)

RULES: tuple[Rule, ...] = (
    # what the code raised: a table of targets without this one, a kernel's own assertion
    rule(
        r"\bKeyError:? ['\"]?" + _TARGET + r"\b|"
        r"\b(?:Assert(?:ion)? (?:failed|error)|GGML_ASSERT)\b[^\n]{0,80}?"
        r"\bUnsupported (?:GPU |SM |CUDA )?arch(?:itecture)?\b(?! ['\"]?[A-Z]\w*For)",
        C.UNSUPPORTED_HARDWARE,
        4.5,
        _BUILD,
        name="code-has-no-entry-for-this-target",
    ),
    rule(
        r"\bsupport for (?:the )?(?:device |chip |SoC )?[A-Za-z]+[\w-]*\d\w* (?:is|was) not "
        r"(?:yet )?implemented\b",
        C.UNSUPPORTED_HARDWARE,
        3.5,
        "the runtime has no support for this device model: a release (or SDK) that lists "
        "it, or a supported device",
        name="device-support-not-implemented",
    ),
    # a generation floor in words: the code ships from some target up
    rule(
        r"\bonly (?:for )?" + _TARGET + r"(?:\+| (?:and|or) (?:higher|above|newer|later))\b|"
        r"\b" + _TARGET + r" (?:or|and) (?:lower|older|below|earlier)\b|"
        r"\b\d+(?:st|nd|rd|th) gen(?:eration)? (?:\w+ ){0,2}(?:CPUs?|GPUs?|processors?) "
        r"(?:or|and) (?:older|earlier|below)\b",
        C.UNSUPPORTED_HARDWARE,
        1.9,
        _BUILD,
        name="generation-floor-in-words",
    ),
    rule(
        r"\bsupport (?:on|for) " + _TARGET + r"\b(?! (?:and|or) (?:higher|above|newer))|"
        r"\b(?:HIPBLAS|ROCBLAS|HIPBLASLT)_STATUS_(?!SUCCESS)\w+(?=[^\n]*\bgfx\d{3,4})|"
        r"\bgfx\d{3,4}[a-z]?\b[^\n]{0,80}?\b(?:HIPBLAS|ROCBLAS|HIPBLASLT)_STATUS_(?!SUCCESS)",
        C.UNSUPPORTED_HARDWARE,
        1.8,
        _BUILD,
        name="target-named-beside-a-failure",
    ),
)
