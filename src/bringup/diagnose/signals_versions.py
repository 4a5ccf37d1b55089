"""The ladder's version half: packages of versions that do not fit, as a report words it.

Two packages released apart fail in a few ways a person describes in words as often as a
traceback shows them: a name one module imports from another that "is not defined" (a
``NameError`` in a title, without its traceback), a module or function "gone" or "removed
in newer versions", a library "lacking" a function (缺少 ... 函数), a CUDA version said to
be too low (版本低). Each is a guess at a version skew (weight below the classifier's
cause) except the ``NameError`` of a name the code itself imports, which decides, and a
model type two packages both register with transformers ("is already used by a
Transformers config"): the engine brings its own copy of a model that the installed
transformers now ships too.

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

_SKEW = (
    "two packages of versions that do not fit together: install the versions the engine "
    "release pins (its requirements), or the engine release made for the installed ones"
)

RULES: tuple[Rule, ...] = (
    # a function or module name (snake case, as code names them) that is not defined: its
    # import from another package failed or the package no longer has it
    rule(
        r"(?:^|[\s\[(`])'[a-z][a-z0-9]*(?:_[a-z0-9]+)+' is not defined\b(?! for option)",
        C.MISSING_DEPENDENCY,
        2.4,
        _SKEW,
        name="name-not-defined-version-skew",
        case=True,
    ),
    rule(
        r"\bis already used by a Transformers (?:config|model)\b",
        C.MISSING_DEPENDENCY,
        4,
        _SKEW,
        name="model-type-registered-twice",
    ),
    rule(
        r"\b(?:is|was|are|were|has been|have been) (?:gone|removed|dropped|deleted)\b"
        r"[^.\n]{0,20}?\b(?:in|since|from) (?:the )?(?:newer|higher|later|recent|latest|new) "
        r"(?:versions?|releases?)\b|"
        r"\bno longer (?:exists?|available) in (?:the )?(?:newer|higher|later|recent|latest) "
        r"(?:versions?|releases?)\b|"
        r"\bCUDA (?:version )?(?:is )?too (?:low|old)\b|"
        r"(?:CUDA|cuda|驱动)\s*版本\s*(?:过|太)?低|版本不(?:匹配|兼容)|"
        r"缺少[^\s，。,]{0,80}?(?:函数|模块|接口)",
        C.MISSING_DEPENDENCY,
        1.9,
        _SKEW,
        name="poster-says-versions-differ",
    ),
)
