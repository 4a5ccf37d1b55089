"""The ladder's build half: a compile, an install or a loader that lacks a piece, in its words.

Beyond the tools :mod:`bringup.diagnose.signals_toolchain` reads, builds and installs stop
in a few more fixed phrasings, all of an environment that lacks something (none is the
engine's fault, the model's or the GPU's):

- the CUDA compiler's own fatal lines (``nvcc fatal : ...``); one naming a GPU target it
  does not know (``Unsupported gpu architecture 'compute_120a'``) says the toolkit is
  older than the GPU, not that the GPU is unsupported;
- a compiler, linker or build tool the build runs that is not on the path (``No such file or
  directory: 'nvcc'``, ``hipcc: command not found``, ``collect2: fatal error: cannot find
  'ld'``), or any program the engine starts ("text-generation-server not found in PATH");
- a compiler without an intrinsic the code calls (``implicit declaration of function
  'vld1q_s16_x2'``): its headers are older than the code;
- a build configuration that finds no headers, loader or SDK for a backend ("Level Zero
  loader or headers not found");
- a wheel pip cannot find for this platform or cannot read ("Unable to find wheel",
  "Wheel ... is invalid", "is not a supported wheel on this platform");
- macOS's dynamic loader missing a symbol or library (``dyld: Symbol not found``): the OS
  or a framework is older than the binary;
- a GPU's device nodes missing (``/dev/kfd``, ``/dev/nvidia0``) or its driver not found, in
  words: the driver is not installed, or not passed into the container.

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

_TOOL = (
    r"(?:nvcc|hipcc|ptxas|nvlink|fatbinary|cicc|ninja|cmake|gcc|g\+\+|clang(?:\+\+)?|icpx|"
    r"dpcpp)"
)
_TOOLKIT = (
    "the compiler toolchain does not build this code: install a CUDA toolkit (nvcc, ptxas) "
    "that knows this GPU and a host compiler it supports, or a prebuilt package"
)

RULES: tuple[Rule, ...] = (
    rule(
        r"\b(?:nvcc|ptxas) fatal\s*:\s*Unsupported gpu architecture '(?:compute|sm)_\w+'",
        C.MISSING_DEPENDENCY,
        4.5,
        "the CUDA toolkit is older than this GPU (it does not know its architecture): "
        "install a toolkit that lists it, or a prebuilt package for this GPU",
        name="toolkit-older-than-the-gpu",
    ),
    rule(
        r"\bnvcc fatal\s*:|"
        r"\bNo such file or directory: '(?:[^'\n]*/)?" + _TOOL + r"'|"
        r"\b" + _TOOL + r": (?:command )?not found\b|"
        # the linker a compiler calls (torch.compile, Triton and JIT builds run gcc)
        r"\bcollect2: (?:fatal )?error: cannot find ['‘`]?ld['’`]?|"
        r"\b(?:cannot|can't|could not|unable to) find (?:the )?linker\b|"
        r"\bimplicit declaration of function ['‘`]?(?:v\w+_[su]\d+\w*|v\w+_[fpu]\d+\w*|"
        r"_mm\d*_\w+|__builtin_\w+)['’`]?",
        C.MISSING_DEPENDENCY,
        3.5,
        _TOOLKIT,
        name="compiler-toolchain-lacks-a-piece",
    ),
    # a program the engine starts is not installed where it looks (a launcher's server
    # binary, a Go exec): the install lacks it, whatever failed after
    rule(
        r"\b[\w.-]+['\"]? (?:was |is )?not found in (?:your |the )?\$?PATH\b|"
        r"\bexecutable file not found in \$?PATH\b",
        C.MISSING_DEPENDENCY,
        4.5,
        "a program the engine runs is not installed (or not on the PATH of the process): "
        "install it (the engine's server component, the tool named) or fix PATH",
        name="program-not-on-path",
    ),
    rule(
        r"\b(?:headers|header files|SDK|toolkit|development files|loader (?:or|and) headers)"
        r"(?: (?:or|and) (?:headers|SDK|libraries))? (?:were |was |are |is )?not found\b|"
        r"\bUnable to (?:find|locate) (?:a |the )?wheel\b|"
        r"\bWheel '[\w.-]+' located at [^\n]* is invalid\b|"
        r"\bis not a supported wheel on this platform\b|"
        r"\bdyld(?:\[\d+\])?: (?:Symbol not found|Library not loaded)\b",
        C.MISSING_DEPENDENCY,
        3.5,
        "the install lacks a piece for this platform (headers, a loader, a wheel, a system "
        "library): install it, or a package built for this OS and Python",
        name="install-lacks-a-piece",
    ),
    rule(
        r"/dev/(?:kfd|dri|nvidia\w*|accel\w*|davinci\w*)\b[^\n]{0,30}?\b(?:is |are )?"
        r"(?:missing|not found|not present|does not exist)\b|"
        r"\b(?:unable to|could not|couldn't|can't|cannot|failed to) (?:find|locate|detect|load) "
        r"(?:the |an? |any )?(?:NVIDIA|CUDA|GPU|AMD|ROCm) (?:device |kernel )?drivers?\b",
        C.MISSING_DEPENDENCY,
        3,
        "the GPU driver is not installed, or not visible here: install it, and pass its "
        "devices into the container (--gpus all, --device /dev/kfd --device /dev/dri)",
        name="gpu-driver-not-reachable",
    ),
)
