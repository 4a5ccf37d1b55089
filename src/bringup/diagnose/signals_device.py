"""The ladder's device half: what a GPU (or accelerator) refuses, and what it cannot hold.

Hardware refusals as kernels, compilers and backends word them, beyond the message grammar
of :mod:`bringup.diagnose.signals_message`:

- a device "too old to be supported", a compiler that "only supports devices of CUDA
  capability >= x", a build "compiled without support for the current GPU architecture" or
  a kernel with "no device code compatible with CUDA arch", "no kernel image available";
- a feature allowed only on named generations ("cannot be enabled except on Ada or Hopper
  Arch", "not supported before Blackwell", "only supported in FlashAttention 3"), or not on
  a vendor's devices ("not supported for AMD GPUs", "not implemented for HPU...");
- a kernel that exists only for CUDA given a tensor in host memory ("must be a CUDA
  tensor"): the engine runs without a GPU;
- a CPU that traps an instruction (``invalid opcode``), a Metal shader library that does
  not compile for this Mac's GPU (``MTLLibraryErrorDomain``, ggml's "failed to create
  library", a device without "a precompiled Metal library");

device memory in an accelerator's or allocator's own words (a Metal buffer "larger than
buffer maximum", a ggml backend buffer that fails to allocate: the host's for the CPU
backend, the device's otherwise; an NPU's "Lack of device memory"; a workspace that fails
to allocate for a named buffer); a Ray placement group still waiting for its GPUs; and
settings a server names outright ("Start it with --embeddings", a dtype or load format a
quantization method does not take, a parallel size the attention heads do not divide by).

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import Rule, rule
from bringup.verdict import Category as C

_GENERATION = r"(?:Volta|Turing|Ampere|Ada|Hopper|Blackwell|sm_?\d{2,3}\w?|SM ?\d{2,3})"
_VENDOR = r"(?:AMD|ROCm|HIP|Intel|XPU|HPU|Gaudi\d?|NPU|Ascend|TPU|Metal|Apple|MPS)"

RULES: tuple[Rule, ...] = (
    # --- what the device refuses ----------------------------------------------------
    rule(
        r"\bwhich is too old to be supported\b|"
        r"\bonly supports devices of CUDA Capability\b|"
        r"\bcompiled without support for the current GPU architecture\b|"
        r"\bhas no device code compatible with CUDA arch\b|"
        r"\bno kernel image available\b|\b(?:CUDA )?kernel images? (?:is |are )?not available\b|"
        r"\bUnsupported Arch\b(?!i)",
        C.UNSUPPORTED_HARDWARE,
        5,
        "the build has no code for this GPU's architecture: a build (or wheel, image) "
        "compiled for it, or a GPU the release supports",
        name="build-lacks-this-gpu-arch",
    ),
    rule(
        r"\bexcept on (?:\w+ (?:or |and |, )?){1,5}Arch(?:itecture)?s?\b|"
        r"\b(?:not supported|unsupported|not available) before " + _GENERATION + r"\b|"
        r"\bonly supported (?:in|with|by) (?:FlashAttention|flash[_-]?attn|FA) ?(?:v)?3\b|"
        r"\bnot (?:yet )?(?:supported|implemented) (?:for|on) " + _VENDOR + r"(?: ?GPUs?)?",
        C.UNSUPPORTED_HARDWARE,
        3.5,
        "the feature the run uses exists only on other GPU generations or vendors: turn it "
        "off (another attention backend, dtype or quantization) on this device",
        name="feature-on-other-generations-only",
    ),
    rule(
        r"\binvalid opcode\b",
        C.UNSUPPORTED_HARDWARE,
        4,
        "the CPU trapped an instruction it lacks (AVX/AVX2/AVX-512): use a build for this CPU",
        name="cpu-invalid-opcode",
    ),
    rule(
        r"\bMTLLibraryErrorDomain\b|"
        # the shaders shipped for other GPU families, and compiling them here failed
        r"\bggml_metal\w*: error: failed to (?:create|compile|load) (?:the )?library\b|"
        r"\bdevice does not have a precompiled Metal library\b",
        C.UNSUPPORTED_HARDWARE,
        3,
        "the Metal shaders do not compile for this Mac's GPU: run without Metal offload "
        "(-ngl 0) or use a build that supports this GPU",
        name="metal-library-not-compiled",
    ),
    # --- what it cannot hold --------------------------------------------------------
    rule(
        r"\bis larger than (?:the )?buffer maximum\b|"
        r"\bggml_backend_(?!cpu)\w+_buffer_type_alloc_buffer:[^\n]{0,40}?failed to allocate|"
        # a backend that names its buffer type without the ggml_backend_ prefix (OpenCL)
        r"\b(?!ggml_|cpu)[a-z0-9]+_buffer_type_alloc_buffer:[^\n]{0,40}?failed to allocate|"
        r"\bLack of device memory\b|\balloc device memory failed\b|"
        r"\bFailed to allocate memory for \w+ with size \d+",
        C.OOM_GPU,
        4,
        "the device memory does not hold this allocation: fewer GPU layers, a smaller "
        "context or batch, or a smaller quantization",
        name="device-buffer-not-allocated",
    ),
    rule(
        r"\bggml_backend_cpu\w*_buffer_type_alloc_buffer:[^\n]{0,40}?failed to allocate",
        C.OOM_HOST,
        4,
        "the host RAM does not hold the CPU buffers: a smaller context (-c), fewer "
        "parallel slots, mmap on, or a smaller quantization",
        name="host-buffer-not-allocated",
    ),
    # --- where the ranks cannot be placed -------------------------------------------
    rule(
        r"\bWaiting for creating a placement group\b|"
        r"\bexceeds (?:the )?available GPUs\b",
        C.DISTRIBUTED_FAILURE,
        3,
        "the Ray cluster cannot place one GPU bundle per rank: check ``ray status`` (every "
        "node joined with its GPUs) or lower the parallel size to the GPUs there",
        name="ray-placement-group-pending",
    ),
    # a GPU kernel handed a tensor in host memory: the engine runs without a GPU (a CPU-only
    # container or machine) and reached code that exists only for CUDA
    rule(
        r"\b\w+ (?:must be|should be|is not) an? CUDA tensor\b|"
        r"\bexpected (?:an? )?CUDA tensor\b[^\n]{0,40}?\bgot (?:a )?CPU\b",
        C.UNSUPPORTED_HARDWARE,
        3,
        "a kernel that exists only for CUDA GPUs got a tensor in host memory: this path "
        "needs an NVIDIA GPU (give the container the GPU, --gpus all), or use the engine's "
        "CPU build",
        name="cuda-only-kernel-without-gpu",
    ),
    # --- settings a server names outright -------------------------------------------
    rule(
        r"\bStart it with `?--[\w-]+|"
        r"\bis not supported for quantization method\b|"
        r"\bonly supports? '\w+' quantization\b|"
        r"\bnot divisible by (?:the )?(?:number of )?(?:attention |kv |key-value )?heads\b|"
        r"\bdivisible by the number of attention heads\b",
        C.INVALID_CONFIG,
        3.5,
        "the settings do not fit together: change the one the message names (the flag to "
        "start with, the dtype or load format for the quantization, a parallel size that "
        "divides the heads)",
        name="settings-named-by-the-server",
    ),
)
