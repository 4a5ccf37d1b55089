"""The ladder's backend half: what a GPU runtime or a compiled engine says by its error names.

CUDA is one of several runtimes under an engine (ROCm/HIP, Vulkan, SYCL/Level Zero, Metal,
Ascend's CANN), and each names its failures with a fixed vocabulary: ``VK_ERROR_DEVICE_LOST``
/ ``vk::Result::eErrorDeviceLost``, ``UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY``,
``CUDA_ERROR_NO_BINARY_FOR_GPU``, ``ACL_ERROR_RT_MEMORY_ALLOCATION``. The name says the kind
whichever engine printed it, so these rules read the names, not one project's sentence:

- the device's memory ran out, by the runtime's own name for it (and PyTorch's allocator
  detail line, ``Tried to allocate ... GPU 0 has a total capacity of``, which survives when
  a post cuts the heading);
- the driver stack cannot start (``cuInit`` failing, NVML's version mismatch, an
  incompatible Vulkan driver, no device of the requested type): an install;
- no code for this device (no binary for the GPU, ``ptxas`` asking for a newer target, a
  ROCm kernel image for another target, a TMA descriptor on a GPU without TMA); a CUDA kernel
  image the driver cannot load (PTX newer than the driver) is an install;
- the device was lost or faulted mid-run: a crash;
- a compiled engine (TensorRT) that cannot be read back: the plan or its plugins were
  serialized by another version (an install; so is an input tensor the runtime asks for
  and the engine lacks), its file cannot be opened (a model file),
  or a request's shape lies outside the optimization profile it was built with (a setting:
  lengths and batch sizes are fixed at build time).

Assembled with the other ``signals_*`` modules by :mod:`bringup.diagnose.ladder`.
"""

from __future__ import annotations

from bringup.diagnose.rule import FrameRule, Rule, frame_rule, rule
from bringup.verdict import Category as C

_DEVICE_MEMORY = (
    "the GPU's memory ran out (the runtime says so by name): lower the context, batch or "
    "layers offloaded to the GPU, or use a larger GPU"
)
_DRIVER = (
    "the GPU runtime's driver stack does not start: install a driver that fits the "
    "runtime (and, in a container, expose it: the NVIDIA/ROCm container toolkit), then "
    "check the device is visible"
)
_PLAN = (
    "the compiled engine (or its plugins) was serialized by another TensorRT/TensorRT-LLM "
    "version: rebuild it with the version that runs it"
)

RULES: tuple[Rule, ...] = (
    # --- device memory, by the runtime's name ---------------------------------------
    rule(
        r"\bVK_ERROR_OUT_OF_DEVICE_MEMORY\b|"
        r"\bUR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\b|\bPI_ERROR_OUT_OF_RESOURCES\b|"
        r"\bZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\b|\bCUDA_ERROR_OUT_OF_MEMORY\b|"
        r"\bACL_ERROR_RT_MEMORY_ALLOCATION\b|\bNPU out of memory\b|"
        # CANN's own sentence for the same (error EL0004 and the runtime's allocators)
        r"\bFailed to apply for memory\b|"
        r"\bDevice memory allocation of size \d+ failed\b|"
        r"\bMTLHeap\w* (?:allocation )?failed\b|"
        r"\b(?:cannot|can't|unable to|failed to) allocate [\d.]+ ?(?:[KMGT]i?B|Bytes) "
        r"(?:of memory )?on (?:the )?device\b",
        C.OOM_GPU,
        4.5,
        _DEVICE_MEMORY,
        name="runtime-names-device-memory-exhausted",
    ),
    # PyTorch's allocator detail, the line under "CUDA out of memory" (posts cut the head)
    rule(
        r"\bTried to allocate [\d.]+ [KMGT]i?B\b.{0,40}?\b(?:GPU|device) \d+ has a total "
        r"capacity of",
        C.OOM_GPU,
        4.5,
        _DEVICE_MEMORY,
        name="allocator-detail-gpu-capacity",
    ),
    # --- the driver stack cannot start ----------------------------------------------
    rule(
        r"\bcuInit(?: err(?:or)?)?[:=(]? ?\d{3}\b|\bnvcuda init failure\b|"
        r"\bcuda driver library init failure\b|\bcuInit failed\b|"
        r"\bFailed to initialize NVML\b|\bNVML_ERROR_\w+|"
        r"\bDriver/library version mismatch\b|"
        r"\bCUDA_ERROR_(?:NO_DEVICE|NOT_INITIALIZED|SYSTEM_DRIVER_MISMATCH|"
        r"COMPAT_NOT_SUPPORTED_ON_DEVICE)\b|\bcudaErrorSystemDriverMismatch\b|"
        r"\bVK_ERROR_(?:INCOMPATIBLE_DRIVER|INITIALIZATION_FAILED)\b|"
        r"\be?Error(?:IncompatibleDriver|InitializationFailed)\b|"
        r"\bhipError(?:NoDevice|InsufficientDriver)\b|"
        r"\bNo device of requested type available\b|"
        r"\b(?:ggml_)?(?:vulkan|sycl|hip|rocm|metal|opencl|cann)\w*: no (?:\w+ )?devices? "
        r"(?:were |was )?found\b|"
        r"\bUR_RESULT_ERROR_(?:UNINITIALIZED|DEVICE_NOT_AVAILABLE)\b",
        C.MISSING_DEPENDENCY,
        4,
        _DRIVER,
        name="runtime-driver-does-not-start",
    ),
    # --- no code for this device ----------------------------------------------------
    rule(
        r"\bCUDA_ERROR_NO_BINARY_FOR_GPU\b|\brequires \.target sm_\d+\w* or higher\b|"
        r"\bptxas\b.{0,120}?\berror\b.{0,80}?\bsm_\d+|"
        r"\bVK_ERROR_FEATURE_NOT_PRESENT\b|\be?ErrorFeatureNotPresent\b|"
        # Metal compiling its shaders for this GPU family
        r"\bggml_metal_init: error: load pipeline error\b|"
        r"\bfailed to (?:create|compile|load|initiali[sz]e) (?:the )?(?:Metal|MTL) "
        r"(?:library|pipeline|shader)",
        C.UNSUPPORTED_HARDWARE,
        4.5,
        "the kernel needs a newer GPU architecture (or a device feature) than this one: "
        "choose a kernel, quantization or backend this GPU supports",
        name="runtime-no-code-for-this-device",
    ),
    # a kernel image the runtime will not load. CUDA's (cudaErrorInvalidKernelImage) comes
    # of PTX the driver cannot compile: a toolkit newer than the driver built it (an
    # install); ROCm's of code objects for another gfx target (the GPU)
    rule(
        r"\b(?:CUDA|Triton Error \[CUDA\])\b[^\n]{0,40}?\bdevice kernel image is invalid\b|"
        r"\bcudaErrorInvalidKernelImage\b|\bCUDA_ERROR_INVALID_IMAGE\b",
        C.MISSING_DEPENDENCY,
        4.5,
        "the driver cannot load the build's GPU code (most often PTX from a CUDA toolkit "
        "newer than the driver): update the driver, or use a build made for this driver and "
        "this GPU's compute capability",
        name="cuda-kernel-image-not-loadable",
    ),
    rule(
        r"\b(?:ROCm|HIP)\b[^\n]{0,40}?\bdevice kernel image is invalid\b|"
        r"\bhipErrorInvalidImage\b",
        C.UNSUPPORTED_HARDWARE,
        4.5,
        "the build holds no code objects for this GPU's gfx target: build for it "
        "(AMDGPU_TARGETS / GPU_TARGETS) or use a backend that supports the GPU",
        name="rocm-kernel-image-not-for-this-gpu",
    ),
    # the Tensor Memory Accelerator is Hopper's (sm_90) and newer: a kernel that sets up a
    # TMA descriptor on an older GPU (Ampere, Ada, Jetson Orin) fails here
    rule(
        r"\bFailed to initiali[sz]e (?:the )?TMA descriptor\b|"
        r"\bTMA descriptor\b[^\n]{0,40}?\b(?:failed|error|invalid)\b",
        C.UNSUPPORTED_HARDWARE,
        3.5,
        "the kernel uses the TMA unit of Hopper-class GPUs (sm_90 and newer): on an older GPU "
        "choose another attention backend or kernel",
        name="tma-descriptor-not-initialised",
    ),
    # --- the device lost or faulted mid-run -----------------------------------------
    rule(
        r"\bVK_ERROR_DEVICE_LOST\b|\be?ErrorDeviceLost\b|\bvk::DeviceLostError\b|\bUR_RESULT_ERROR_DEVICE_LOST\b|"
        # the same in words, as a Vulkan or WebGPU layer (or a report's title) says it
        r"\b(?:GPU |Vulkan |the )?[Dd]evice [Ll]ost\b(?! (?:connection|track))|"
        r"\bCUDA_ERROR_(?:ILLEGAL_ADDRESS|LAUNCH_FAILED|ILLEGAL_INSTRUCTION|"
        r"MISALIGNED_ADDRESS|HARDWARE_STACK_ERROR)\b|\bhipErrorIllegalAddress\b|"
        r"\bMTLCommandBufferError\w*|\bGPU Hang Occurred\b|\bXid \d+\b|"
        r"\bcommand buffer \d+ failed with status \d+",
        C.RUNTIME_CRASH,
        3.5,
        "the GPU faulted while running a kernel: rerun to see whether it repeats, then try "
        "another backend or kernel for this model (and check the driver's own log)",
        name="runtime-device-lost",
    ),
    # a runtime's error raised without a name that says more (like "CUDA error" alone): a
    # crash, as a guess (SYCL's checks print the file and line they caught it at)
    rule(
        r"\bSYCL error\b|\bException caught at file:\S+sycl|\bACL error\b|"
        r"\bVulkan error\b",
        C.RUNTIME_CRASH,
        1.5,
        name="runtime-error-unnamed",
    ),
    # --- a compiled engine that cannot be read back ---------------------------------
    rule(
        r"\bstdArchiveReader\b|\bdeserializePlugin\b|"
        r"\bmagicTagRead == (?:kMAGIC_TAG|magicTag)\b|\bkSERIALIZATION_VERSION\b|"
        # the runtime asks the engine for an input its builder (another version) did not make
        r"\bInput tensor '\w+' not found; expected shape\b",
        C.MISSING_DEPENDENCY,
        3.5,
        _PLAN,
        name="engine-plan-of-another-version",
    ),
    rule(
        r"\b(?:Error|Failed|Unable) (?:to )?open(?:ing)? (?:the )?engine (?:file|plan)\b|"
        r"\bengine (?:file|plan) [^\n]{0,120}?\b(?:does not exist|not found|cannot be "
        r"opened)\b",
        C.MODEL_LOAD_FAILURE,
        4,
        "the engine file is not where the launch points: point the engine directory at the "
        "built (per-rank) engine files",
        name="engine-file-not-opened",
    ),
    # a request's shape outside the optimization profile the engine was built with
    rule(
        r"\bsatisfyProfile\b|\bdoes not satisfy any optimization profile\b|"
        r"\bnot within (?:the )?(?:optimization )?profile\b|"
        r"\bexceeds? (?:the )?(?:optimization )?profile(?:'s)? (?:max|maximum)\b",
        C.INVALID_CONFIG,
        5,
        "a request's length or batch lies outside what the engine was built for: rebuild "
        "it with larger max input/output/sequence lengths or batch size, or ask for less",
        name="shape-outside-engine-profile",
    ),
)

FRAME_RULES: tuple[FrameRule, ...] = (
    # the frame that raised is the engine's check that the KV cache holds one sequence
    frame_rule(
        r"|\w*Error",
        r":\w*(?:raise_if_cache_size_invalid|check_enough_kv_cache_memory|"
        r"check_enough_\w*memory)",
        C.OOM_GPU,
        3.5,
        "the KV cache left after the weights cannot hold one sequence of the maximum length: "
        "raise the GPU memory fraction, lower the maximum model length, or use more GPUs",
    ),
)
