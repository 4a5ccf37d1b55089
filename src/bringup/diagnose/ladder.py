"""The general ladder: signals any engine's log carries, whichever engine wrote it.

Where ``rules_generic`` holds the texts CUDA, NCCL, PyTorch and the hub print, this set reads
the *kind* of a failure from signals that do not depend on one project's wording, in order
of how much they say:

1. the final Python exception, by type and the frame that raised it: ``AttributeError`` on
   a module or a library's class, ``TypeError`` about keyword or positional arguments and a
   ``NameError`` on compiled ops mean two packages of different versions (a dependency); a
   ``NoneType`` attribute is a plain crash; an exception raised while a tokenizer loads
   means the model's tokenizer files do not fit; with no rule for its message, a
   ``ValueError`` is a refused value (the model's when it names the model, a setting's when
   it names a flag) and a ``NotImplementedError`` the model, both as guesses;
   a traceback posted without its exception line is read by its frames alone, as a guess
   (a check of what the GPU can do, setting up the ranks);
2. signals and exit codes written in the log (``Illegal instruction``, ``signal 4``, Windows
   status codes), Rust and Go panics, MPI frames of a crash dump, since a posted or
   captured log often names how the process died;
3. allocator messages that say which memory ran out (prefill budgets, TensorRT's
   ``OutOfMemory``);
4. missing modules, symbols, loaders and toolchains, and CUDA/ROCm error names that say
   more than "a CUDA error" (no GPU runtime, a device index not visible, a kernel that
   does not fit this GPU);
5. argument validation as any parser phrases it (clap, Go's flag, llama.cpp, llamafile,
   pydantic-style ``x must be < y``) and requests longer than the configured context;
6. model files refused by format version (old GGML magic) versus files that are not a model;
   what the model's own config asks for and the code refuses (a model class named beside
   a refusal, "for this model", a field its config lacks, rope scaling, a missing chat
   template, remote code to trust);
7. evidence of a hang (a timeout message, "waiting for shard", a poster's "hangs");
8. weakest, the vocabulary of a message no rule knows: which noun refused (model,
   tokenizer, option, file) with which verb (not supported, invalid, not found), and a
   poster's own words for running out of memory (RAM and the OOM killer: host; else GPU).

The message grammar (which noun refused with which verb: a GPU, a capture, a parallel size,
a config key; ranks that cannot connect, a cluster that cannot place them; a C++ runtime's
abort), between items 4 and 8 in strength, lives in :mod:`bringup.diagnose.signals_message`;
a GPU runtime's own error names (HIP, Vulkan, SYCL, Metal, CANN, the CUDA driver API) and a
compiled engine that cannot be read back, item 4's other half, in
:mod:`bringup.diagnose.signals_backend`; a feature the user switched on (LoRA, images,
speculative decoding, grammars, embeddings, chat templates) and a message naming a setting
beside a constraint, refused configurations of item 5, in :mod:`bringup.diagnose.signals_feature`;
where an exception was raised when no rule reads its message (a version check, the hub
client, the ranks' communicators, the chat template, LoRA and grammar code, the model-class
lookup), item 1's frames as guesses, in :mod:`bringup.diagnose.signals_frames`; a weight loader's
parameter name without a slot and loaders refusing an architecture, projector or tensor set in
:mod:`bringup.diagnose.signals_loader`; the tool that missed a piece of the install (JIT
builds, GPU libraries, the driver, CMake, TensorRT versions) in
:mod:`bringup.diagnose.signals_toolchain`; builds and features without code for this GPU,
device and host buffers that do not allocate, pending placement groups and settings a server
names in :mod:`bringup.diagnose.signals_device`; a build without code for this chip's
instruction set (ROCm libraries without this ``gfx`` target, a CPU without AVX-512) in
:mod:`bringup.diagnose.signals_isa`; a GPU target named in words beside a refusal (a generation
floor, a kernel table without this target, support for a device not implemented) in
:mod:`bringup.diagnose.signals_arch`; a compile, install or loader that lacks a piece (nvcc's
fatal lines, a compiler not on the path, a wheel for another platform, macOS's dyld, a GPU's
device nodes) in :mod:`bringup.diagnose.signals_build`; packages of versions that do not fit,
as a report words it, in :mod:`bringup.diagnose.signals_versions`; a value outside what the
engine can hold (a port past 65535, a context too small for the requests) in
:mod:`bringup.diagnose.signals_limits`; failures while serving requests (a request that failed
during generation, a KV cache below one sequence, collectives timing out, an engine step
that timed out, a KV cache that did not move between disaggregated instances) in
:mod:`bringup.diagnose.signals_serving`.
Items 1-4 live in :mod:`bringup.diagnose.signals_runtime`, 5-8 in
:mod:`bringup.diagnose.signals_launch`, and what the model asks for that the code refuses
(item 6's second half) in :mod:`bringup.diagnose.signals_model`; all are engine-independent
and apply to every log.

Garbage *output* (text that is the engine's answer, not its log) is read by
:mod:`bringup.diagnose.outputtext`, which needs no keyword gate.
"""

from __future__ import annotations

from bringup.diagnose import (
    signals_arch,
    signals_backend,
    signals_build,
    signals_device,
    signals_feature,
    signals_frames,
    signals_isa,
    signals_launch,
    signals_limits,
    signals_loader,
    signals_message,
    signals_model,
    signals_platform,
    signals_prose,
    signals_runtime,
    signals_serving,
    signals_toolchain,
    signals_versions,
)
from bringup.diagnose.rule import RuleSet

RULES = RuleSet(
    engine="ladder",
    rules=(
        *signals_runtime.RULES,
        *signals_backend.RULES,
        *signals_toolchain.RULES,
        *signals_build.RULES,
        *signals_versions.RULES,
        *signals_device.RULES,
        *signals_isa.RULES,
        *signals_arch.RULES,
        *signals_loader.RULES,
        *signals_platform.RULES,
        *signals_feature.RULES,
        *signals_limits.RULES,
        *signals_serving.RULES,
        *signals_message.RULES,
        *signals_launch.RULES,
        *signals_model.RULES,
        *signals_prose.RULES,
    ),
    frame_rules=(
        *signals_launch.FRAME_RULES,
        *signals_platform.FRAME_RULES,
        *signals_backend.FRAME_RULES,
        *signals_frames.FRAME_RULES,
    ),
)
