"""Families of failure wording from serving-time and platform reports, on synthetic lines.

Each family is a kind of wording (a GPU target named beside a refusal, a compiler or
installer missing a piece, packages of versions that differ, a request failing while the
server generates, a poster's words for a hang, wrong text or a crash), checked on lines
written for the test, with near misses that must not be read as the family. Readings of a
poster's words stay guesses (confidence below 0.5).
"""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.verdict import Category as C


def _rules(log: str, engine: str | None = None) -> tuple[str, float]:
    d = classify(log, engine=engine, learned=False)
    return d.label, d.confidence


def _label(log: str, engine: str | None = None) -> str:
    return _rules(log, engine)[0]


# --- a GPU target named in words ------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "KeyError: 'sm_61'",
        "the kernel lookup raised keyerror gfx1010 on my card",
        "[TensorRT-LLM][ERROR] Assertion failed: Unsupported architecture (kernels/xqa.cpp:41)",
        "CANN error: EE1001: support for Ascend310P is not implemented",
        "CUDA kernel images not available for the Quadro P4000 (compute 6.1)",
        "the HIP runtime does not yet support this GPU (gfx803)",
    ],
)
def test_target_refused_by_the_code(line: str) -> None:
    label, conf = _rules(line)
    assert label == C.UNSUPPORTED_HARDWARE.value
    assert conf >= 0.5


@pytest.mark.parametrize(
    "line",
    [
        "the prebuilt kernels are only sm89 and above, so my card is out",
        "fused MoE is broken when you have sm_70 or older",
        "this build will not start on 6th gen Intel CPUs or older",
        "Feature request: fp8 GEMM support on sm_121",
        "Radeon gfx1036 iGPU fails with ROCBLAS_STATUS_INTERNAL_ERROR",
    ],
)
def test_target_named_by_a_poster_is_a_guess(line: str) -> None:
    label, conf = _rules(line)
    assert label == C.UNSUPPORTED_HARDWARE.value
    assert conf < 0.5


@pytest.mark.parametrize(
    "line",
    [
        "KeyError: 'model.layers.0.mlp.gate_proj.weight'",
        'Error: unsupported architecture "Phi4ForCausalLM"',
        "support for sm_90 and higher is included in this wheel",
        "support for LoRA adapters is not implemented yet",
        "ROCBLAS_STATUS_SUCCESS returned for every call",
    ],
)
def test_target_near_misses(line: str) -> None:
    assert _label(line) != C.UNSUPPORTED_HARDWARE.value


def test_a_model_loader_refusing_an_architecture_stays_the_model() -> None:
    assert _label('Error: unsupported architecture "Glm5ForCausalLM"') == (
        C.MODEL_INCOMPATIBLE.value
    )


# --- compilers, installers, loaders ----------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "nvcc fatal   : Unsupported gpu architecture 'compute_110'",
        "nvcc fatal : Value 'c++20' is not defined for option 'std'",
        "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'",
        "hipcc: command not found",
        "kernel.c:12: error: implicit declaration of function 'vmlaq_f16'",
        "-- oneAPI headers or SDK not found, SYCL backend disabled",
        "ERROR: Unable to find wheel for flashinfer-python 0.2.9 (cp313)",
        "ERROR: somepkg-1.0-cp39-cp39-win32.whl is not a supported wheel on this platform.",
        "dyld[4411]: Library not loaded: @rpath/libomp.dylib",
        "the container starts but /dev/nvidia0 is missing",
        "Failed to find the NVIDIA kernel driver on this node",
    ],
)
def test_install_lacks_a_piece(line: str) -> None:
    label, conf = _rules(line)
    assert label == C.MISSING_DEPENDENCY.value
    assert conf >= 0.5


def test_nvcc_unknown_gpu_is_an_old_toolkit_not_an_unsupported_gpu() -> None:
    assert _label("nvcc fatal : Unsupported gpu architecture 'compute_103a'") == (
        C.MISSING_DEPENDENCY.value
    )


@pytest.mark.parametrize(
    "line",
    [
        "found nvcc at /usr/local/cuda/bin/nvcc, version 12.8",
        "the X-Trace header not found in the response",
        "implicit declaration of variable count, assuming int",
        "Successfully installed wheel-0.45.1",
    ],
)
def test_install_near_misses(line: str) -> None:
    assert _label(line) != C.MISSING_DEPENDENCY.value


def test_compiler_target_without_the_intrinsic_is_the_hardware() -> None:
    line = (
        "arm_neon.h:1234: error: inlining failed in call to 'always_inline' "
        "'float16x8_t vfmlalq_low_f16(...)': target specific option mismatch"
    )
    assert _label(line) == C.UNSUPPORTED_HARDWARE.value


# --- versions that do not fit ----------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "[Bug] 'apply_rotary_emb_fused' is not defined after upgrading to 0.9",
        "the old input_batch module was removed in newer versions of the library",
        "装好之后提示cuda版本太低，换了驱动也不行",
        "启动时报错：缺少torch_xyz.fused_norm函数",
    ],
)
def test_versions_that_differ(line: str) -> None:
    assert _label(line) == C.MISSING_DEPENDENCY.value


@pytest.mark.parametrize(
    "line",
    [
        "ptxas fatal : Value 'sm_130' is not defined for option 'gpu-name'",
        "jinja2: 'messages' is undefined",
        "the deprecated flag was removed from the docs",
    ],
)
def test_version_near_misses(line: str) -> None:
    d = classify(line, learned=False)
    assert d.rule not in (
        "ladder:name-not-defined-version-skew",
        "ladder:poster-says-versions-differ",
    )


# --- serving -------------------------------------------------------------------------


def test_request_failed_while_generating_is_a_crash() -> None:
    line = 'data:{"error":"Request failed during generation: Server error: index out of range"}'
    label, conf = _rules(line)
    assert label == C.RUNTIME_CRASH.value
    assert conf >= 0.5


def test_request_failed_while_generating_out_of_memory_is_memory() -> None:
    line = "Request failed during generation: Server error: CUDA out of memory. Tried to allocate"
    assert _label(line) == C.OOM_GPU.value


@pytest.mark.parametrize(
    "line",
    [
        "maxKvCacheTokens must be large enough to hold at least one sequence of max_seq_len",
        "the KV cache is too small for a single request of 32768 tokens",
    ],
)
def test_kv_cache_below_one_sequence(line: str) -> None:
    assert _label(line) == C.OOM_GPU.value


@pytest.mark.parametrize(
    "line",
    [
        "during rollout the NCCL all-reduce timed out on two of the 16 ranks",
        "we keep getting NCCL timeout errors after a few hours of serving",
    ],
)
def test_collective_timeout_in_words(line: str) -> None:
    assert _label(line) == C.DISTRIBUTED_FAILURE.value


def test_nccl_timeout_setting_is_not_a_failure() -> None:
    d = classify("set the NCCL timeout to 1800 seconds for the large model", learned=False)
    assert d.rule != "ladder:collective-timed-out-in-words"


def test_ollama_prompt_cut_to_the_context_is_a_setting() -> None:
    line = (
        'time=2025-06-01T10:00:00Z level=WARN source=runner.go:130 msg="truncating input '
        'prompt" limit=4096 prompt=9120 keep=4 new=4096'
    )
    label, conf = _rules(line, engine="ollama")
    assert label == C.INVALID_CONFIG.value
    assert conf < 0.5


def test_ollama_pull_412_is_a_client_too_old() -> None:
    log = "pulling manifest\nError: pull model manifest: 412:"
    assert _label(log, engine="ollama") == C.MODEL_INCOMPATIBLE.value


@pytest.mark.parametrize(
    "line",
    [
        "Assertion failed: MPI size 2 != TP size 4 * PP size 1",
        "[TensorRT-LLM][ERROR] Assertion failed: maxBatchTokens % pageSize == 0 (cache.cpp:80)",
        "the batch job fails because the prompt exceeded the model's context length of 8192",
    ],
)
def test_settings_refused_while_serving(line: str) -> None:
    assert _label(line) == C.INVALID_CONFIG.value


def test_model_unknown_or_unsupported_beats_the_setting_named() -> None:
    line = "Exception: failed to guess 'n_ctx'. This model is unknown or unsupported."
    assert _label(line) == C.MODEL_INCOMPATIBLE.value


def test_flash_attention_models_missing_a_module_is_the_install() -> None:
    log = (
        "WARN text_generation_launcher: Could not import Flash Attention enabled models: "
        "No module named 'rotary_kernels'\n"
        "NotImplementedError: Sharded Falcon requires Flash Attention enabled models."
    )
    assert _label(log) == C.MISSING_DEPENDENCY.value


def test_flash_attention_models_alone_stay_the_hardware() -> None:
    line = "NotImplementedError: Sharded Falcon requires Flash Attention enabled models."
    assert _label(line) == C.UNSUPPORTED_HARDWARE.value


@pytest.mark.parametrize(
    "line",
    [
        "ggml_metal_device_init: error: failed to create library",
        "ggml_metal_init: the device does not have a precompiled Metal library - compiling",
    ],
)
def test_metal_library_for_another_gpu_family(line: str) -> None:
    assert _label(line) == C.UNSUPPORTED_HARDWARE.value


def test_traceback_source_line_assigning_output_is_not_an_answer() -> None:
    log = (
        'File "/app/runner.py", line 88, in step\n'
        "    output = self.model_step(batch)\n"
        'File "/app/model.py", line 12, in model_step\n'
        "    return self.layer(batch)"
    )
    d = classify(log, learned=False)
    assert d.label != C.GARBAGE_OUTPUT.value


# --- a poster's words ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "category"),
    [
        ("my streaming request never returned, even after ten minutes", C.STARTUP_TIMEOUT_OR_HANG),
        ("the endpoint simply does not response to POSTs anymore", C.STARTUP_TIMEOUT_OR_HANG),
        ("处理几个请求之后服务就挂起了", C.STARTUP_TIMEOUT_OR_HANG),
        ("int4 weights corrupt the output on long prompts", C.GARBAGE_OUTPUT),
        ("the fp8 build produces corrupted, non-terminating output", C.GARBAGE_OUTPUT),
        ("the ROCm backend returns '!!!!!!' for every prompt", C.GARBAGE_OUTPUT),
        ("the answers are factually incorrect since the update", C.GARBAGE_OUTPUT),
        ("Eval bug: llama-cli SIGABRT when the prompt holds an image", C.RUNTIME_CRASH),
    ],
)
def test_poster_wording_is_a_guess(line: str, category: C) -> None:
    label, conf = _rules(line)
    assert label == category.value
    assert conf < 0.5


@pytest.mark.parametrize(
    "line",
    [
        "it is not a crash, the output is simply nonsense",
        "no crash at all, but the answers are garbage",
    ],
)
def test_a_crash_ruled_out_is_not_read_as_one(line: str) -> None:
    assert _label(line) == C.GARBAGE_OUTPUT.value


@pytest.mark.parametrize(
    "line",
    ["there was no crash, the page just took a while", "this is not a crash of the server"],
)
def test_a_crash_ruled_out_alone_is_no_crash(line: str) -> None:
    assert _label(line) != C.RUNTIME_CRASH.value


def test_a_crash_avoided_by_a_workaround_is_still_a_crash() -> None:
    assert _label("with the default template it does not crash if I pass --jinja") == (
        C.RUNTIME_CRASH.value
    )


@pytest.mark.parametrize(
    "line",
    [
        "the corrupted download was fixed by pulling again",
        "the function returns a corrupted pointer sometimes",
    ],
)
def test_wrong_text_near_misses(line: str) -> None:
    d = classify(line, learned=False)
    assert d.rule != "ladder:reporter-says-wrong-text"
