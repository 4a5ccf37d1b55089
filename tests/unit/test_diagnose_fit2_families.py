"""Signal families of the rule round written from fit2's misses: a weight loader naming a
parameter it has no slot for, loaders refusing an architecture, projector or tensor set,
toolchain pieces (JIT builds, GPU libraries, the driver, CMake, TensorRT versions), builds
and features without code for this GPU, device and host buffers that do not allocate, Ray
placement groups left waiting, and settings a server names outright. The log lines here are
written for the tests, not copied from any corpus; the near misses must not fire."""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.verdict import Category


@pytest.mark.parametrize(
    ("log", "category", "rule"),
    [
        # the weight loader
        (
            "KeyError: 'model.layers.7.self_attn.o_proj.weight_scale'",
            Category.MODEL_INCOMPATIBLE,
            "weight-key-has-no-parameter",
        ),
        (
            'ERROR worker.py:88] KeyError: "decoder.blocks.3.ffn.up.bias"',
            Category.MODEL_INCOMPATIBLE,
            "weight-key-has-no-parameter",
        ),
        (
            "the server stops with a KeyError during load_weights for the vision tower",
            Category.MODEL_INCOMPATIBLE,
            "keyerror-on-a-weight-reported",
        ),
        # loaders refusing the model
        (
            "ValueError: Architecture falcon3 not supported",
            Category.MODEL_INCOMPATIBLE,
            "loader-architecture-unknown",
        ),
        (
            "RuntimeError: Unknown gguf model_type: mamba3",
            Category.MODEL_INCOMPATIBLE,
            "loader-architecture-unknown",
        ),
        (
            "clip_init: failed to load model 'proj.gguf': load_hparams: unknown projector "
            "type: newvision",
            Category.MODEL_INCOMPATIBLE,
            "projector-type-unknown",
        ),
        (
            "the backend process exits after a tensor-count mismatch in the loader",
            Category.MODEL_INCOMPATIBLE,
            "tensor-set-differs",
        ),
        (
            "ValueError: Can not map tensor 'model.layers.3.mlp.gate_proj.qzeros'",
            Category.MODEL_INCOMPATIBLE,
            "tensor-set-differs",
        ),
        (
            "Value error, rope_scaling should have a 'type' key",
            Category.MODEL_INCOMPATIBLE,
            "rope-scaling-form-unknown",
        ),
        (
            '{"error":"mymodel:latest does not support tools"}',
            Category.MODEL_INCOMPATIBLE,
            "model-lacks-tools",
        ),
        # toolchain pieces
        (
            "RuntimeError: Ninja build failed. Ninja output:\n[1/3] nvcc -c kernel.cu",
            Category.MISSING_DEPENDENCY,
            "jit-kernel-build-failed",
        ),
        (
            "ptxas fatal   : Value 'sm_130a' is not defined for option 'gpu-name'",
            Category.MISSING_DEPENDENCY,
            "jit-kernel-build-failed",
        ),
        (
            "rocm: no pre-built GPU library found for this platform",
            Category.MISSING_DEPENDENCY,
            "gpu-runtime-piece-missing",
        ),
        (
            "RuntimeError: CUDA dependencies are not installed.",
            Category.MISSING_DEPENDENCY,
            "gpu-runtime-piece-missing",
        ),
        (
            "warning: gpu support disabled: nvidia-smi command failed",
            Category.MISSING_DEPENDENCY,
            "nvidia-driver-missing-or-old",
        ),
        (
            'level=WARN msg="cudaSetDevice err: 35"',
            Category.MISSING_DEPENDENCY,
            "nvidia-driver-missing-or-old",
        ),
        (
            "CMake Error at cpp/CMakeLists.txt:40 (message):\n  This SDK is required.",
            Category.MISSING_DEPENDENCY,
            None,
        ),
        (
            "[TensorRT-LLM][ERROR] Tensor names in engine are not the same as expected",
            Category.MISSING_DEPENDENCY,
            "tensorrt-build-run-versions-differ",
        ),
        # no code for this GPU
        (
            "RuntimeError: Found GeForce GTX 960 which is too old to be supported by the compiler",
            Category.UNSUPPORTED_HARDWARE,
            "build-lacks-this-gpu-arch",
        ),
        (
            "ERROR: kernel mul_mat has no device code compatible with CUDA arch 520.",
            Category.UNSUPPORTED_HARDWARE,
            "build-lacks-this-gpu-arch",
        ),
        (
            "[ERROR] Assertion failed: FP8 GEMM cannot be enabled except on Hopper or "
            "Blackwell Arch.",
            Category.UNSUPPORTED_HARDWARE,
            "feature-on-other-generations-only",
        ),
        (
            "ValueError: this attention backend is not supported for AMD GPUs",
            Category.UNSUPPORTED_HARDWARE,
            "feature-on-other-generations-only",
        ),
        (
            "kernel: traps: llama-run[812] trap invalid opcode ip:7f00 sp:7ffe error:0",
            Category.UNSUPPORTED_HARDWARE,
            None,
        ),
        (
            "ggml_metal_init: error: Error Domain=MTLLibraryErrorDomain Code=3 "
            '"program_source:12:3: error: unknown type name"',
            Category.UNSUPPORTED_HARDWARE,
            None,
        ),
        # memory that does not allocate
        (
            "ggml_metal_add_buffer: error: buffer 'kv' size 9000000000 is larger than "
            "buffer maximum of 8000000000",
            Category.OOM_GPU,
            "device-buffer-not-allocated",
        ),
        (
            "ggml_backend_vulkan_buffer_type_alloc_buffer: failed to allocate buffer of "
            "size 123456",
            Category.OOM_GPU,
            "device-buffer-not-allocated",
        ),
        (
            "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size "
            "99999999999",
            Category.OOM_HOST,
            None,
        ),
        (
            "RuntimeError: NPU_ERR: Lack of device memory. (code: -12)",
            Category.OOM_GPU,
            "device-buffer-not-allocated",
        ),
        # ranks that cannot be placed
        (
            "INFO ray_utils.py:300] Waiting for creating a placement group of specs for "
            "60 seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]",
            Category.DISTRIBUTED_FAILURE,
            "ray-placement-group-pending",
        ),
        # settings named outright
        (
            '{"error":{"code":501,"message":"This server does not support reranking. '
            'Start it with `--reranking`"}}',
            Category.INVALID_CONFIG,
            "settings-named-by-the-server",
        ),
        (
            "ValueError: this load format only supports 'gptq' quantization",
            Category.INVALID_CONFIG,
            "settings-named-by-the-server",
        ),
    ],
)
def test_a_family_member_decides(log: str, category: Category, rule: str | None) -> None:
    d = classify(log, learned=False)
    assert d.category == category, (d.category, d.rule, d.evidence)
    if rule is not None:
        assert d.rule is not None and d.rule.endswith(f":{rule}"), d.rule


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # a KeyError on a plain key (a dict of options), not a dotted parameter name
        ("KeyError: 'max_tokens'", "weight-key-has-no-parameter"),
        # a GPU or CPU architecture refused is not the model's
        ("Architecture sm_61 not supported", "loader-architecture-unknown"),
        ("architecture x86_64 is not supported", "loader-architecture-unknown"),
        # a GPU backend's buffer on the host side is not a device buffer
        (
            "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer",
            "device-buffer-not-allocated",
        ),
        # "Failed to import" of an ordinary module is not a GPU runtime piece
        ("Failed to import requests", "gpu-runtime-piece-missing"),
        # another CUDA error number is not the driver's
        ("CUDA error 350 at ggml-cuda.cu:100", "nvidia-driver-missing-or-old"),
        # a placement group that exists is not a pending one
        ("Created a placement group with 2 bundles", "ray-placement-group-pending"),
        # the word "tools" without a refusal
        ("the model supports tools and images", "model-lacks-tools"),
        # a device found old is the driver's text, not the GPU's
        ("The NVIDIA driver on your system is too old", "build-lacks-this-gpu-arch"),
    ],
)
def test_a_near_miss_does_not_fire(line: str, rule: str) -> None:
    d = classify(line, learned=False)
    assert d.rule is None or not d.rule.endswith(f":{rule}"), (d.rule, d.category)
