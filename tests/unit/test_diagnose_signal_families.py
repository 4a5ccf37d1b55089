"""Signal families of the rule round of 2026-12-06: each is a class of wording (a GPU refused
by its capability floor or generation, a port named by its socket or setting, a fabric set-up
between ranks, a build tool's last words, a pull cut short, a runner's connection dropped,
checkpoint tensors against the model's parameters), read whichever engine wrote it. The log
lines here are written for the tests, not copied from any corpus."""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.diagnose.diagnosis import GUESS_BELOW
from bringup.verdict import Category


@pytest.mark.parametrize(
    ("log", "category", "rule"),
    [
        # the GPU refused, in wordings other than "<noun> is not supported"
        (
            "[E] Builder failed: kernels with INT4 precision require hardware with INT4 support.",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        (
            "[ERROR] Assertion failed: paged FP8 attention cannot be enabled on pre-Ada GPUs.",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        (
            "RuntimeError: ('Kernel is not available for ', 'this GPU. Min capability: 80. ', "
            "'Current capability: 75.')",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        (
            "what():  [ERROR] Assertion failed: No suitable decode kernels are found for "
            "this head size.",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        (
            "NotImplementedError: paged attention is not supported with device type=xpu.",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        (
            "No kernel named _ZTS12fused_op_xyz was found -46 (PI_ERROR_INVALID_KERNEL_NAME)",
            Category.UNSUPPORTED_HARDWARE,
            "message-gpu-refused",
        ),
        # a port named by its socket or by the setting that holds it
        (
            "E1010 main.cc:12] failed to start HTTP service: Socket '0.0.0.0:9001' already in use",
            Category.PORT_IN_USE,
            "port-occupied",
        ),
        (
            "ValueError: stats_port at 4123 is not available after 10 seconds.",
            Category.PORT_IN_USE,
            "port-occupied",
        ),
        # a fabric between ranks that would not set up
        (
            "/src/transport/ibrc.cpp:77: non-zero status: 7 nvshmem transport setup failed",
            Category.DISTRIBUTED_FAILURE,
            "ranks-cannot-connect",
        ),
        (
            "ibrc.cpp:12: non-zero status: 22 ibv_create_qp failed",
            Category.DISTRIBUTED_FAILURE,
            "ranks-cannot-connect",
        ),
        # a world size against the one the run has
        (
            "AssertionError: Engine world size (4 * 1) != Runtime world size (2)",
            Category.INVALID_CONFIG,
            "world-size-mismatch",
        ),
        (
            "[ERROR] Assertion failed: MPI worldSize is expected to be equal to tp*pp here",
            Category.INVALID_CONFIG,
            "world-size-mismatch",
        ),
        # an assertion's own source line checks a key of the model's config
        (
            '  File "/app/engine/config.py", line 40, in verify_len\n'
            '    assert "low_freq" in rope_scaling\n'
            "AssertionError",
            Category.MODEL_INCOMPATIBLE,
            "assert-on-model-config-key",
        ),
        # a model file whose tensors point past its end
        (
            "the tensor `layers.2.w1` data is not within the file bounds, maybe a short copy",
            Category.MODEL_LOAD_FAILURE,
            "model-file-damaged",
        ),
        # a cluster asked for more GPUs than it holds
        (
            "ValueError: The requested GPU count exceeds the total number of available GPUs "
            "in the cluster.",
            Category.DISTRIBUTED_FAILURE,
            "cluster-cannot-place-workers",
        ),
        # a kernel's bounds check at run time
        (
            "Out of bound tensor access detected at dim[0]: assert(10 < 8)",
            Category.RUNTIME_CRASH,
            "out-of-bounds-access",
        ),
        (
            "ERROR rpc backend: failed to connect to 10.1.1.5:50052, retrying",
            Category.DISTRIBUTED_FAILURE,
            "ranks-cannot-connect",
        ),
        # a pull whose stream ended early
        (
            "$ ollama pull tinymodel\npulling manifest\nError: unexpected end of JSON input",
            Category.MODEL_LOAD_FAILURE,
            "pull-cut-short",
        ),
        # a program the engine starts is not there
        (
            "error starting runner: fork/exec /opt/app/bin/runner: no such file or directory",
            Category.MISSING_DEPENDENCY,
            "executable-missing",
        ),
        (
            "startup failed: engine server binary not found",
            Category.MISSING_DEPENDENCY,
            "executable-missing",
        ),
        # a request refused as malformed
        (
            '{"type": "BadRequestError", "message": "field `stop` must be a list"}',
            Category.INVALID_CONFIG,
            "request-refused-400",
        ),
        # the checkpoint's tensors against the model's parameters
        (
            "ValueError: There is no module or parameter named 'head.out_scale' in FooForLM.",
            Category.MODEL_INCOMPATIBLE,
            "checkpoint-tensors-mismatch",
        ),
        (
            "RuntimeError: Provided tensor names are different from those expected by the engine.",
            Category.MODEL_INCOMPATIBLE,
            "checkpoint-tensors-mismatch",
        ),
        # a model file named and not there
        (
            "could not load model: stat /srv/models/tiny-q4.gguf: no such file or directory",
            Category.MODEL_LOAD_FAILURE,
            "model-file-missing",
        ),
        # the runner the server talks to dropped the connection mid-request
        (
            'Error: do completion request: Post "http://127.0.0.1:41234/completion": EOF',
            Category.RUNTIME_CRASH,
            "runner-connection-dropped",
        ),
        (
            "ERROR decode: text_generation_client: lib.rs:40: Server error: transport error",
            Category.RUNTIME_CRASH,
            "runner-connection-dropped",
        ),
    ],
)
def test_a_family_member_decides(log: str, category: Category, rule: str) -> None:
    d = classify(log, learned=False)
    assert d.category is category
    assert d.rule == f"ladder:{rule}"
    assert d.remedy
    assert d.confidence >= 0.5


@pytest.mark.parametrize(
    ("log", "category", "rule"),
    [
        (
            'level=WARN msg="CPU does not have minimum vector extensions, GPU use disabled"',
            Category.UNSUPPORTED_HARDWARE,
            "ladder:cpu-lacks-vector-extensions",
        ),
        (
            "ninja: build stopped: subcommand failed.",
            Category.MISSING_DEPENDENCY,
            "ladder:toolchain-failed",
        ),
        (
            '3 errors detected in the compilation of "/tmp/jit/gemm_kernel.cu".',
            Category.MISSING_DEPENDENCY,
            "ladder:toolchain-failed",
        ),
        (
            "program_source:1:10: fatal error: 'kernels-common.h' file not found",
            Category.MISSING_DEPENDENCY,
            "ladder:toolchain-failed",
        ),
        (
            "-11 (PI_ERROR_BUILD_PROGRAM_FAILURE) Exception caught at file: backend.cpp",
            Category.MISSING_DEPENDENCY,
            "ladder:toolchain-failed",
        ),
        (
            "ValueError: Loaded weights leave no GPU memory for the KV cache at this fraction.",
            Category.OOM_GPU,
            "ladder:allocator-out-of-device-memory",
        ),
        (
            "INFO llm_engine.py:1] # GPU blocks: 0, # CPU blocks: 512",
            Category.OOM_GPU,
            "ladder:allocator-out-of-device-memory",
        ),
        (
            "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::2048 (2)MB",
            Category.OOM_GPU,
            "ladder:allocator-out-of-device-memory",
        ),
        (
            "WARNING scheduler.py:9] Input prompt (9000 tokens) is too long and exceeds limit "
            "of 4096",
            Category.INVALID_CONFIG,
            "ladder:more-than-the-configured-maximum",
        ),
    ],
)
def test_a_widened_family_reads_the_new_wording(log: str, category: Category, rule: str) -> None:
    d = classify(log, learned=False)
    assert (d.category, d.rule) == (category, rule)


def test_a_pull_error_needs_a_pull() -> None:
    """``Error: EOF`` alone says a stream ended; only beside a pull is it a download."""
    d = classify("Error: EOF", learned=False)
    assert d.category is not Category.MODEL_LOAD_FAILURE or d.confidence < GUESS_BELOW


def test_a_named_cause_outweighs_a_dropped_runner_connection() -> None:
    log = (
        "CUDA error: out of memory\n"
        'Error: do completion request: Post "http://127.0.0.1:40001/completion": EOF'
    )
    assert classify(log, learned=False).category is Category.OOM_GPU


def test_a_port_setting_that_is_merely_mentioned_is_not_held() -> None:
    d = classify("INFO metrics_port set to 9100; serving metrics", learned=False)
    assert d.category is not Category.PORT_IN_USE


def test_a_long_token_does_not_slow_the_model_file_rule() -> None:
    """The model-file pattern starts only at the beginning of a token: a long run of word
    characters is scanned once, not once per position."""
    import time

    log = "x" * 200_000 + " missing"
    start = time.perf_counter()
    classify(log, learned=False)
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    ("log", "category"),
    [
        (
            "After converting it to 3-bit, the output of the small model is always nonsense.",
            Category.GARBAGE_OUTPUT,
        ),
        ("On the second card the generation is clearly not correct.", Category.GARBAGE_OUTPUT),
        (
            "The download suddenly stops and won't resume; nothing else is printed.",
            Category.STARTUP_TIMEOUT_OR_HANG,
        ),
        ("-> [Fallo] La carga del modelo tardó demasiado.", Category.STARTUP_TIMEOUT_OR_HANG),
        ("When I build the engine the process always gets killed.", Category.OOM_HOST),
    ],
)
def test_a_reporters_wider_words_are_still_a_guess(log: str, category: Category) -> None:
    d = classify(log, learned=False)
    assert d.category is category
    assert d.confidence < GUESS_BELOW


def test_errno_99_on_a_connect_is_the_peer_not_the_bind() -> None:
    connect = (
        "[W socket.cpp:10] [c10d] The client socket has failed to connect to "
        "[node-a]:29500 (errno: 99 - Cannot assign requested address)."
    )
    assert classify(connect, learned=False).category is Category.DISTRIBUTED_FAILURE
    bind = (
        "OSError: [Errno 99] error while attempting to bind on address: cannot assign "
        "requested address"
    )
    assert classify(bind, learned=False).category is Category.INVALID_CONFIG


def test_a_traceback_cut_inside_the_memory_profile_run_is_a_guessed_gpu_oom() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/srv/engine/worker.py", line 80, in determine_available_memory\n'
        "    self.runner.profile_run()\n"
        '  File "/srv/engine/runner.py", line 120, in profile_run\n'
        "    hidden = self.model(ids)\n"
    )
    d = classify(log, learned=False)
    assert d.category is Category.OOM_GPU
    assert d.confidence < GUESS_BELOW


def test_a_traceback_cut_inside_a_jit_build_is_a_guessed_toolchain() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 9, '
        "in _run_ninja_build\n"
        "    subprocess.run(cmd)\n"
    )
    d = classify(log, learned=False)
    assert d.category is Category.MISSING_DEPENDENCY
    assert d.confidence < GUESS_BELOW


def test_a_setting_refused_with_another_setting_stays_a_setting() -> None:
    d = classify("ValueError: prefix caching is not supported with sliding window.", learned=False)
    assert d.category is Category.INVALID_CONFIG


def test_advice_to_install_beside_a_fallback_is_not_a_missing_dependency() -> None:
    log = (
        "WARNING sampler.py:9] FastSampler is not available. Falling back to the native "
        "implementation. For the best performance, please install FastSampler."
    )
    assert classify(log, learned=False).category is not Category.MISSING_DEPENDENCY
    assert (
        classify("ERROR: the fastkern package is not installed", learned=False).category
        is Category.MISSING_DEPENDENCY
    )
