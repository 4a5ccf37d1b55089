"""The ladder's instruction-set half: a build with no code for this chip's instruction set.

A binary or library carries code for the instruction sets it was compiled for; on another
chip the loader, the math library or the user says so in their own words:

- ROCm's math libraries (rocBLAS, hipBLASLt) ship their kernels per ``gfx`` target as Tensile
  library files: one that cannot be read for this GPU's target (``TensileLibrary_lazy_gfx1151
  .dat``), or hipBLASLt's ``Heuristic Fetch Failed``, means no kernels for this GPU; a
  launcher that finds "no compatible ROCm GPUs" says the same of the whole device;
- a CPU without the vector extensions a build uses: "AVX512 instructions which are not
  available", a poster's "I do not have AVX-512", oneDNN that cannot build its ``brgemm``
  kernel (it needs AVX-512 or AMX), a build that "does not work on old CPUs";
- a compiler refusing to inline an intrinsic the build's target does not enable (GCC's
  "inlining failed in call to 'always_inline' ...: target specific option mismatch").

A poster's own words are a guess (weight below the classifier's cause); the libraries' and
loaders' messages decide. Assembled with the other ``signals_*`` modules by
:mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import REFUSED_ONLY, Rule, rule
from bringup.verdict import Category as C

_CPU_ISA = r"(?:AVX[\w-]*|AMX[\w-]*|SSE[\d.]*\w*|FMA\d?|F16C)"

RULES: tuple[Rule, ...] = (
    rule(
        r"\bTensileLibrary\w*_gfx\d+\w*\.(?:dat|co|hsaco)\b|"
        r"\b(?:hipBLASLt|rocBLASLt|rocBLAS) error: Heuristic Fetch Failed\b|"
        r"\bNo (?:compatible|supported) (?:ROCm |AMD |HIP )?GPUs?\b(?! (?:needed|required))",
        C.UNSUPPORTED_HARDWARE,
        4,
        "the ROCm libraries have no kernels for this GPU's gfx target: a ROCm release (or a "
        "rocBLAS/hipBLASLt build) that lists this target, an HSA_OVERRIDE_GFX_VERSION of a "
        "supported sibling, or ROCBLAS_USE_HIPBLASLT=0",
        name="rocm-libraries-lack-this-gfx",
    ),
    rule(
        REFUSED_ONLY + r"(?:\b" + _CPU_ISA + r"(?: instructions?| support)? (?:which |that )?"
        r"(?:are |is )?not (?:available|supported) (?:on|by|in) (?:this|the|my|your|\w+ Core|"
        r"older)\b|"
        r"\b" + _CPU_ISA + r" instructions? (?:which |that )?(?:are |is )?not available\b|"
        r"\bUnable to get JIT kernel for brgemm\b)",
        C.UNSUPPORTED_HARDWARE,
        3.5,
        "the build uses CPU instructions this machine lacks (AVX2, AVX-512, AMX): use a "
        "build for this CPU (the portable or all-variants one) or another host",
        name="cpu-lacks-the-build-isa",
    ),
    # GCC refusing to inline an intrinsic the build's target flags do not enable
    # ("inlining failed in call to 'always_inline' 'vdotq_s32': target specific option
    # mismatch"): the target the build was configured for lacks that extension
    rule(
        r"\binlining failed in call to ['‘]?always_inline['’]?[^\n]{0,120}?"
        r"target specific option mismatch\b",
        C.UNSUPPORTED_HARDWARE,
        3.5,
        "the build's target CPU lacks an extension the code uses (dot product, AVX, FP16): "
        "build with -march for a CPU that has it, or with that code path turned off",
        name="build-target-lacks-the-intrinsic",
    ),
    # llama.cpp's system info line says which vector extensions this CPU has: with AVX and
    # AVX2 both absent and the process dying on a signal, the build needed what it lacks
    rule(
        r"\bAVX = 0 \|(?:[^\n]*?\|)? AVX2 = 0\b",
        C.UNSUPPORTED_HARDWARE,
        3,
        "the CPU has neither AVX nor AVX2, which this build needs: use a build without them "
        "(the portable or noavx one) or another host",
        name="cpu-without-avx-crashed",
        also=r"Segmentation fault|Illegal instruction|SIG(?:ILL|SEGV)|signal (?:4|11)\b|"
        r"core dumped",
    ),
    rule(
        r"\bI (?:do not|don't) have (?:the )?" + _CPU_ISA + r"\b|"
        r"\b(?:does not|doesn't|won't|will not) (?:work|run|start) on (?:an? |my )?"
        r"(?:old|older) CPUs?\b",
        C.UNSUPPORTED_HARDWARE,
        1.8,
        "the CPU is said to lack what the build needs (AVX2, AVX-512): use a build for this "
        "CPU or another host",
        name="poster-says-cpu-lacks-isa",
    ),
)
