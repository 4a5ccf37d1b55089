"""The ladder's toolchain half: an install that lacks a piece, named by the tool that missed it.

Whatever the engine, a failure of the build or runtime environment is written by the tool
that met it, in that tool's words; none is the engine's fault or the model's:

- a just-in-time kernel build that stops (``Ninja build failed``, ``build stopped:
  subcommand failed``), or a ``ptxas`` that does not know the GPU's target (``Value
  'sm_121a' is not defined for option 'gpu-name'``): the CUDA toolkit is older than the GPU;
- a GPU library the binary does not ship (llamafile's ``no pre-built GPU library``, a GPU
  backend "explicitly requested, but it wasn't available"), "CUDA dependencies are not
  installed", a platform plugin that fails to import its package (``Failed to import
  torch_npu``);
- the driver missing or too old for the runtime: ``nvidia-smi`` that fails, CUDA error 35
  (``cudaErrorInsufficientDriver``, printed as ``err: 35`` or ``error 35``);
- ``CMake Error`` while building from source: the build environment (OS release, compiler,
  SDK) the project requires;
- a TensorRT engine built by another TensorRT(-LLM) version than the one that runs it:
  tensor names or serialized lengths that differ, versions said to mismatch;
- pip's resolver reporting conflicts (``requires x==1, but you have x 2 which is
  incompatible``, ``ResolutionImpossible``): packages of versions that do not fit together.

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

RULES: tuple[Rule, ...] = (
    rule(
        r"\bNinja build failed\b|\bninja: build stopped: subcommand failed\b|"
        r"\bptxas\b[^\n]{0,40}?\bValue '[\w.]+' is not defined for option 'gpu-name'",
        C.MISSING_DEPENDENCY,
        3.5,
        "a kernel compiled at run time did not build: install a CUDA toolkit (nvcc, "
        "ptxas) that knows this GPU, or the engine's prebuilt kernels, or pick a backend "
        "that needs no compilation",
        name="jit-kernel-build-failed",
    ),
    rule(
        r"\bno pre-?built (?:GPU|CUDA|ROCm|Metal) (?:library|module|binary)\b|"
        r"\bsupport for --gpu \w+ was explicitly requested, but it wasn't available\b|"
        r"\b(?:CUDA|GPU|ROCm) (?:dependencies|libraries) (?:are |is )?not (?:installed|"
        r"found|available)\b|"
        r"\bFailed to import (?:torch_npu|torch_xla|intel_extension_for_pytorch|habana\w*|"
        r"flashinfer|triton)\b",
        C.MISSING_DEPENDENCY,
        3.5,
        "the GPU runtime piece the engine loads is not installed (or not for this "
        "platform): install the engine's GPU build or the package the message names",
        name="gpu-runtime-piece-missing",
    ),
    rule(
        r"\bnvidia-smi (?:command )?(?:failed|not found)\b|\bnvidia-smi: command not found\b|"
        r"\bNVIDIA-SMI has failed\b|"
        r"\bcuda\w* err(?:or)?:? 35\b|"
        # a container image's own check (NGC images print it at start)
        r"\b(?:container|image) was built for NVIDIA Driver (?:Release )?[\d.]+ or later\b|"
        r"\bNVIDIA Driver (?:Release )?[\d.]+ or later\b[^\n]{0,60}?\bwas detected\b",
        C.MISSING_DEPENDENCY,
        4,
        "the NVIDIA driver is missing or older than the CUDA runtime the build uses "
        "(CUDA error 35: insufficient driver): install or update the driver, or use a "
        "build for the installed CUDA",
        name="nvidia-driver-missing-or-old",
    ),
    rule(
        r"^\s*CMake Error\b",
        C.MISSING_DEPENDENCY,
        2.5,
        "the build from source stopped in CMake: install what the message names "
        "(compiler, SDK, OS release the project requires) or use a prebuilt package",
        name="cmake-build-environment",
    ),
    rule(
        r"\bTensor names in engine are not the same as expected\b|"
        r"\bExpected length != real length\b|"
        r"\bTensorRT(?:-LLM)? versions?\b[^\n]{0,60}?\b(?:mismatch|differ)|"
        r"\bdifferent TensorRT(?:-LLM)? versions?\b",
        C.MISSING_DEPENDENCY,
        3.5,
        "the engine was built by another TensorRT-LLM/TensorRT version than the runtime: "
        "build it with the version the server (or Triton backend) runs",
        name="tensorrt-build-run-versions-differ",
    ),
    # pip's resolver, after (or instead of) an install: the packages it leaves in place pin
    # versions of each other that do not match
    rule(
        r"\bpip's dependency resolver does not currently take into account\b|"
        r"\brequires [\w.\[\]-]+ ?[<>=!~]=?[^,\s]+, but you have [\w.-]+ [^\s]+ which is "
        r"incompatible\b|"
        r"\bResolutionImpossible\b|\bthese package versions have conflicting dependencies\b",
        C.MISSING_DEPENDENCY,
        3.5,
        "the installed packages pin versions of each other that conflict: install the "
        "versions the engine release requires (pip check lists them), in a clean environment",
        name="pip-dependency-conflict",
    ),
)
