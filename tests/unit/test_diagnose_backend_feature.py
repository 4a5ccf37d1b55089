"""The ladder's backend and feature families: a GPU runtime's own error names (HIP, Vulkan,
SYCL, Metal, CANN, the CUDA driver API), a compiled engine that cannot be read back, a
feature the user switched on and the code refused, a message that names a setting beside a
constraint, and the smaller families beside them (a layer without the checkpoint's
quantization parameters, Ray's memory monitor, swap space, backend libraries). Each
excerpt is written for the family, in the words such runtimes use."""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.diagnose.diagnosis import GUESS_BELOW
from bringup.verdict import Category


@pytest.mark.parametrize(
    ("log", "category", "rule"),
    [
        # --- a GPU runtime's own names ---------------------------------------------------
        (
            "ggml_vulkan: Device memory allocation of size 2147483648 failed.\n"
            "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory",
            Category.OOM_GPU,
            None,
        ),
        (
            "Native API failed. Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
            Category.OOM_GPU,
            "runtime-names-device-memory-exhausted",
        ),
        (
            "RuntimeError: call aclnnMatmul failed, ACL_ERROR_RT_MEMORY_ALLOCATION",
            Category.OOM_GPU,
            "runtime-names-device-memory-exhausted",
        ),
        (
            "    Tried to allocate 512.00 MiB. GPU 1 has a total capacity of 15.77 GiB of\n"
            "    which 80.12 MiB is free.",
            Category.OOM_GPU,
            "allocator-detail-gpu-capacity",
        ),
        (
            'level=DEBUG source=gpu.go:300 msg="probing"\ncuInit err: 100\n'
            'level=DEBUG msg="Unable to load cudart" error="cuda driver library init failure: 100"',
            Category.MISSING_DEPENDENCY,
            "runtime-driver-does-not-start",
        ),
        (
            "Failed to initialize NVML: Driver/library version mismatch",
            Category.MISSING_DEPENDENCY,
            "runtime-driver-does-not-start",
        ),
        (
            "vk::createInstance: ErrorIncompatibleDriver",
            Category.MISSING_DEPENDENCY,
            "runtime-driver-does-not-start",
        ),
        (
            "ptxas /tmp/kernel.ptx, line 77; error   : Feature 'wgmma' requires .target "
            "sm_90a or higher",
            Category.UNSUPPORTED_HARDWARE,
            "runtime-no-code-for-this-device",
        ),
        (
            "ggml_vulkan: vk::Queue::submit: ErrorDeviceLost\n"
            "GGML_ASSERT(res == vk::Result::eSuccess) failed",
            Category.RUNTIME_CRASH,
            None,
        ),
        (
            "CUDA driver API error CUDA_ERROR_ILLEGAL_ADDRESS at decode step 12",
            Category.RUNTIME_CRASH,
            "runtime-device-lost",
        ),
        # --- compiled engines -------------------------------------------------------------
        (
            "[TensorRT-LLM][ERROR] Assertion failed: plugin field count (foo.cpp:12)\n"
            "3  0x7f00 tensorrt_llm::plugins::FooPluginCreator::deserializePlugin(char const*)",
            Category.MISSING_DEPENDENCY,
            "engine-plan-of-another-version",
        ),
        (
            "[TensorRT-LLM][ERROR] Assertion failed: Failed to open engine file: "
            "/engines/rank3.engine (runtime/utils.cpp:40)",
            Category.MODEL_LOAD_FAILURE,
            "engine-file-not-opened",
        ),
        (
            "[TRT] [E] 3: [executionContext.cpp::setInputShape::2000] Error Code 3: API Usage "
            "Error (condition: satisfyProfile Runtime dimension does not satisfy any "
            "optimization profile)\n[TRT] [E] Error Code 1: Cuda Runtime (an illegal memory "
            "access was encountered)",
            Category.INVALID_CONFIG,
            "shape-outside-engine-profile",
        ),
        # --- features refused -------------------------------------------------------------
        (
            "ValueError: LoRA rank 128 is greater than max_lora_rank 32.",
            Category.INVALID_CONFIG,
            "lora-refused",
        ),
        (
            "ValueError: The model does not support image inputs.",
            Category.MODEL_INCOMPATIBLE,
            "model-lacks-modality-or-task",
        ),
        (
            "ValueError: At most 1 image(s) may be provided in one request; too many images "
            "for this launch",
            Category.INVALID_CONFIG,
            "multimodal-inputs-refused",
        ),
        (
            "ValueError: num_speculative_tokens must be at least 1 for the ngram method",
            Category.INVALID_CONFIG,
            None,
        ),
        (
            "parse: error parsing grammar: expecting newline or end at ::= foo",
            Category.INVALID_CONFIG,
            "structured-output-refused",
        ),
        (
            "srv  send_error: task id = 3, error: Embedding is not enabled for this server; "
            "start with --embeddings",
            Category.INVALID_CONFIG,
            "task-not-enabled",
        ),
        (
            "jinja2.exceptions.TemplateError: Conversation roles must alternate "
            "user/assistant/user/assistant",
            Category.INVALID_CONFIG,
            "chat-template-refused",
        ),
        (
            "RuntimeError: max_num_seqs (1024) exceeds the largest captured batch",
            Category.INVALID_CONFIG,
            "exception-names-a-setting",
        ),
        (
            'E1201 model.cc:10] "failed: [TensorRT-LLM][ERROR] Assertion failed: the '
            'tokenizer dir is empty"',
            Category.INVALID_CONFIG,
            "assertion-setting-empty",
        ),
        (
            "ValueError: Quantization method specified in the model config (gptq) does not "
            "match the quantization method specified in the `quantization` argument (awq).",
            Category.INVALID_CONFIG,
            None,
        ),
        (
            "AssertionError: the kv cache dtype specified in the model's config differs from "
            "the one given on the command line",
            Category.INVALID_CONFIG,
            "flag-contradicts-model-config",
        ),
        # --- the smaller families ---------------------------------------------------------
        (
            "AttributeError: 'RowParallelLinear' object has no attribute 'weight_scale'",
            Category.MODEL_INCOMPATIBLE,
            "layer-lacks-quantization-parameter",
        ),
        (
            "Memory on the node (IP: 10.0.0.4, ID: abc123) where the task (actor ID: f00, "
            "name=Worker) was running was 61GB / 64GB (0.96), which exceeds the memory usage "
            "threshold of 0.95.",
            Category.OOM_HOST,
            None,
        ),
        (
            "RuntimeError: Aborted due to the lack of CPU swap space.",
            Category.OOM_HOST,
            "host-swap-space-exhausted",
        ),
        (
            "load_backend: failed to load /opt/app/lib/libggml-cuda.so",
            Category.MISSING_DEPENDENCY,
            None,
        ),
        (
            "Error: input file is not in GGUF format",
            Category.MODEL_LOAD_FAILURE,
            None,
        ),
        (
            "Unrecognized keys in `rope_scaling` for 'rope_type'='yarn': {'beta'}",
            Category.MODEL_INCOMPATIBLE,
            None,
        ),
        (
            "RuntimeError: Ray does not allocate any GPUs on the driver node.",
            Category.DISTRIBUTED_FAILURE,
            None,
        ),
        (
            'GGML_ASSERT(t != nullptr && "missing output_norm tensor") failed',
            Category.MODEL_INCOMPATIBLE,
            None,
        ),
    ],
)
def test_family_decides(log: str, category: Category, rule: str | None) -> None:
    d = classify(log)
    assert d.category is category, (d.category, d.rule, d.evidence)
    if rule is not None:
        assert d.rule is not None and d.rule.endswith(f":{rule}"), d.rule


@pytest.mark.parametrize(
    "line",
    [
        # a healthy engine's configuration dump names settings and features without refusal
        "INFO 01-02 10:00:00 [config.py:100] Initializing a V1 LLM engine with config: "
        "model='m', speculative_config=None, enable_lora=False, max_lora_rank=16, "
        "max_num_seqs=256, guided_decoding_backend='auto'",
        "INFO 01-02 10:00:01 [serving_chat.py:90] Using default chat template: tool calling "
        "is available",
        "llama_model_loader: - kv  20: tokenizer.chat_template str = {% for m in messages %}",
    ],
)
def test_healthy_lines_name_no_failure(line: str) -> None:
    d = classify(line)
    assert d.rule is None or not any(
        d.rule.endswith(f":{name}")
        for name in (
            "lora-refused",
            "speculative-refused",
            "structured-output-refused",
            "chat-template-refused",
            "exception-names-a-setting",
        )
    ), d.rule


def test_a_named_cause_outweighs_a_feature_refusal() -> None:
    log = (
        "ValueError: speculative decoding requires more memory than is free\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    )
    assert classify(log).category is Category.OOM_GPU


def test_a_combination_refused_is_a_setting_not_the_model() -> None:
    d = classify("ValueError: The draft model is not supported with pipeline parallelism")
    assert d.category is Category.INVALID_CONFIG


def test_the_frame_of_a_kv_cache_check_reads_as_gpu_memory() -> None:
    frames = (
        "Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 171, in initialize_cache\n'
        "    raise_if_cache_size_invalid(num_gpu_blocks,\n"
        '  File "/x/worker.py", line 370, in raise_if_cache_size_invalid\n'
    )
    raised = classify(frames + "    raise ValueError(", learned=False)
    assert raised.category is Category.OOM_GPU
    assert raised.confidence >= GUESS_BELOW
    # cut before its exception: where it was is a kind of failure, so only a guess
    cut = classify(frames + "    if max_seq_len > max_tokens:", learned=False)
    assert cut.category is Category.OOM_GPU
    assert cut.confidence < GUESS_BELOW


def _traceback(*frames: str, exc: str = "") -> str:
    body = "".join(f'  File "{path}", line 10, in {func}\n    x = y()\n' for path, func in frames)
    return "Traceback (most recent call last):\n" + body + exc


@pytest.mark.parametrize(
    ("frames", "category"),
    [
        (
            [("/app/pkg/server.py", "launch"), ("/app/pkg/utils.py", "assert_pkg_version")],
            Category.MISSING_DEPENDENCY,
        ),
        (
            [
                ("/app/pkg/download.py", "fetch"),
                ("/venv/site-packages/huggingface_hub/file_download.py", "hf_hub_download"),
            ],
            Category.MODEL_LOAD_FAILURE,
        ),
        (
            [
                ("/venv/site-packages/eng/distributed/parallel_state.py", "init_group"),
                ("/venv/site-packages/eng/distributed/device_communicators/pynccl.py", "__init__"),
            ],
            Category.DISTRIBUTED_FAILURE,
        ),
        (
            [
                ("/venv/site-packages/eng/entrypoints/chat_utils.py", "render"),
                (
                    "/venv/site-packages/transformers/tokenization_utils_base.py",
                    "apply_chat_template",
                ),
            ],
            Category.INVALID_CONFIG,
        ),
        (
            [("/venv/site-packages/eng/lora/models.py", "activate_adapter")],
            Category.INVALID_CONFIG,
        ),
        (
            [("/venv/site-packages/eng/model_loader.py", "get_model_cls_by_arch_name")],
            Category.MODEL_INCOMPATIBLE,
        ),
    ],
)
def test_the_frame_that_raised_an_unread_exception_guesses_its_kind(
    frames: list[tuple[str, str]], category: Category
) -> None:
    for exc in ("RuntimeError: something no rule reads", ""):
        d = classify(_traceback(*frames, exc=exc), learned=False)
        assert d.category is category, (exc, d.category, d.rule)
    cut = classify(_traceback(*frames), learned=False)
    if category is not Category.MISSING_DEPENDENCY:  # a version check is a cause
        assert cut.confidence < GUESS_BELOW


def test_a_frame_guess_never_outweighs_a_message_that_names_the_cause() -> None:
    log = _traceback(
        ("/venv/site-packages/eng/lora/models.py", "activate_adapter"),
        exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB",
    )
    assert classify(log).category is Category.OOM_GPU


@pytest.mark.parametrize(
    ("line", "level", "message"),
    [
        (
            'E1113 01:00:58.469718 3545 backend_model.cc:692] "failed to create instance"',
            "error",
            '"failed to create instance"',
        ),
        ("2024-05-01 10:00:00,123 - app.worker - ERROR - ValueError: x", "error", "ValueError: x"),
        ("2023-08-31 05:51:03,033 - INFO - run.py:50 - loading", "info", "loading"),
        ("2024-05-01 10:00:00 WARNING  slow start", "warning", "slow start"),
        ("[2024-05-01 10:00:00,123] [ERROR] [root] ValueError: x", "error", "ValueError: x"),
        (
            "2024-01-01 10:00:00.123 | ERROR    | svc.core.worker:launch:12 - ValueError: x",
            "error",
            "ValueError: x",
        ),
        ("2024/05/01 10:00:00 routes.go:12: listening", None, "listening"),
        ("12:34PM ERR Server error", "error", "Server error"),
    ],
)
def test_wrapper_logger_prefixes_are_read(line: str, level: str | None, message: str) -> None:
    from bringup.diagnose.logtext import content, level_of

    assert content(line) == message
    assert level_of(line) == level


def test_an_exception_behind_a_wrapper_prefix_is_the_final_exception() -> None:
    log = (
        "2024-05-01 10:00:00,123 - svc - ERROR - Traceback (most recent call last):\n"
        '2024-05-01 10:00:00,123 - svc - ERROR -   File "/x/eng/config.py", line 9, in check\n'
        "2024-05-01 10:00:00,123 - svc - ERROR - AssertionError: tp_size 3 must divide the "
        "32 attention heads"
    )
    assert classify(log).category is Category.INVALID_CONFIG


@pytest.mark.parametrize(
    ("log", "category"),
    [
        (
            "ggml_metal_init: error: load pipeline error: Error Domain=AGXMetal Code=3 "
            '"Compiler encountered an internal error"',
            Category.UNSUPPORTED_HARDWARE,
        ),
        ("ggml_metal_graph_compute: command buffer 1 failed with status 5", Category.RUNTIME_CRASH),
        (
            "llama_init_from_model: failed to initialize the context: failed to allocate "
            "compute pp buffers",
            Category.OOM_GPU,
        ),
        (
            "[TensorRT-LLM][ERROR] Assertion failed: Unsupported data type, pre SM 80 (x.cpp:9)",
            Category.UNSUPPORTED_HARDWARE,
        ),
        (
            "[TensorRT-LLM][ERROR] Assertion failed: prompt (5000) + output (600) has exceeded "
            "max sequence length (4096)",
            Category.INVALID_CONFIG,
        ),
        ("RuntimeError: Error building extension 'fused_kernels'", Category.MISSING_DEPENDENCY),
        ("RuntimeError: No XPU GPUs are available", Category.MISSING_DEPENDENCY),
        (
            "RuntimeError: CUDA error: no kernel image is available\nCompile with "
            "`TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            Category.UNSUPPORTED_HARDWARE,
        ),
        (
            "WARNING: The requested image's platform (linux/arm64) does not match the "
            "detected host platform (linux/amd64/v3)",
            Category.UNSUPPORTED_HARDWARE,
        ),
        ("ggml_vulkan: No devices found.", Category.MISSING_DEPENDENCY),
        (
            "ggml_backend_sycl_buffer_type_alloc_buffer: can't allocate 8589934592 Bytes of "
            "memory on device",
            Category.OOM_GPU,
        ),
        (
            "The code execution cannot proceed because MSVCP140.dll was not found.",
            Category.MISSING_DEPENDENCY,
        ),
        ("SYCL error: CHECK_TRY_ERROR(q.memcpy(dst, src, n)): Meet error", Category.RUNTIME_CRASH),
        (
            "[TensorRT-LLM][ERROR] Assertion failed: beamWidth <= maxBeamWidth (session.cpp:9)",
            Category.INVALID_CONFIG,
        ),
        ("GGML_ASSERT(n_tokens <= ctx->n_batch) failed", Category.INVALID_CONFIG),
        (
            "AssertionError: Engine version 0.11.0 does not match runtime version 0.12.0",
            Category.MISSING_DEPENDENCY,
        ),
        (
            "There are not enough slots available in the system to satisfy the 8\n"
            "slots that were requested by the application:",
            Category.INVALID_CONFIG,
        ),
        (
            "E0101 00:00:00.000000 1 model_lifecycle.cc:621] failed to load 'llm' version 1: "
            "Invalid argument: unable to find backend library for backend 'vllm'",
            Category.MISSING_DEPENDENCY,
        ),
    ],
)
def test_platform_and_engine_wordings(log: str, category: Category) -> None:
    d = classify(log)
    assert d.category is category, (d.category, d.rule)


def test_an_index_check_is_a_crash_not_a_limit() -> None:
    d = classify("GGML_ASSERT(i01 >= 0 && i01 < ne01) failed")
    assert d.category is Category.RUNTIME_CRASH


def test_compiler_is_not_mpi() -> None:
    """'Compiler' and 'CompilationError' hold the letters of MPI: neither is a rank set-up."""
    d = classify("triton.compiler.errors.CompilationError: at 12:4: def kernel(x):")
    assert d.category is Category.RUNTIME_CRASH  # an exception line no rule reads: a crash
    assert d.confidence < GUESS_BELOW
    assert d.stage_reached is None


@pytest.mark.parametrize(
    ("report", "category"),
    [
        ("After loading the weights the server just stalls, nothing happens.", None),
        ("The request never returns and the GPU sits idle.", None),
        ("With fp8 KV cache the answers are completely unreadable.", Category.GARBAGE_OUTPUT),
        ("The chat endpoint returns an empty response for every prompt.", Category.GARBAGE_OUTPUT),
    ],
)
def test_a_reporters_words_are_a_guess(report: str, category: Category | None) -> None:
    d = classify(report, learned=False)
    assert d.category is (category or Category.STARTUP_TIMEOUT_OR_HANG), (d.category, d.rule)
    assert d.confidence < GUESS_BELOW


_RICH = (
    "╭──────────────── Traceback (most recent call last) ────────────────╮\n"
    "│ /srv/app/server.py:41 in serve                                    │\n"
    "│                                                                   │\n"
    "│ ❱ 41 │   model = load(model_id)                                   │\n"
    "│ ╭─────────── locals ───────────╮                                  │\n"
    "│ │ model_id = 'org/some-model'  │                                  │\n"
    "│ ╰──────────────────────────────╯                                  │\n"
    "│ /srv/app/distributed/device_communicators/pynccl.py:77 in __init__ │\n"
    "╰───────────────────────────────────────────────────────────────────╯\n"
)


def test_a_rich_traceback_is_read_through_its_box() -> None:
    from bringup.diagnose.logtext import content
    from bringup.diagnose.pytrace import read_tracebacks

    lines = (_RICH + "RuntimeError: something no rule reads").splitlines()
    assert content(lines[5]) == "model_id = 'org/some-model'"
    (tb,) = read_tracebacks(lines)
    assert [f.func for f in tb.frames] == ["serve", "__init__"]
    assert tb.exc_type == "RuntimeError"
    # the frame it was raised in decides, as a guess
    d = classify("\n".join(lines), learned=False)
    assert d.category is Category.DISTRIBUTED_FAILURE
    assert d.confidence < GUESS_BELOW


def test_a_box_is_not_a_logger_prefix() -> None:
    from bringup.diagnose.logtext import has_log_prefix

    assert not has_log_prefix("│ │ dtype = None │ │")
