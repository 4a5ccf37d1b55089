"""Signal families that hold beyond the logs the rules were read from: the final exception
of a traceback by type and message noun, what a model's own config asks for, a missing chat
template, llama.cpp refusing a file it has already parsed, the shell reporting a killed job,
and a log of logger lines never read as a posted answer. Every log here is written for the
test in the engines' own wording (none is taken from a corpus)."""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.diagnose.logtext import content
from bringup.verdict import Category as C

_VLLM_CONFIG_TB = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1024, '
    "in create_engine_config\n"
    "    model_config = self.create_model_config()\n"
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/config/model.py", line 611, in '
    "__post_init__\n"
    "    self.verify()\n"
)


@pytest.mark.parametrize(
    ("message", "want"),
    [
        # the model's config, refused by code older than the model: not a flag to change
        (
            "ValueError: `rope_scaling` must be a dictionary with two fields, `type` and "
            "`factor`, got {'factor': 8.0, 'rope_type': 'llama3'}",
            C.MODEL_INCOMPATIBLE,
        ),
        ("ValueError: Unknown RoPE scaling type yarn", C.MODEL_INCOMPATIBLE),
        (
            "ValueError: The quantization method gptq_marlin is not supported for the current "
            "model.",
            C.MODEL_INCOMPATIBLE,
        ),
        (
            "ValueError: Cannot find any of ['group_size'] in the model's quantization config.",
            C.MODEL_INCOMPATIBLE,
        ),
        # a value the user set, refused by the same config code
        (
            "ValueError: Chunked prefill and prefix caching are not supported with pipeline "
            "parallelism.",
            C.INVALID_CONFIG,
        ),
        ("ValueError: max_num_seqs (1024) exceeds the maximum allowed (512).", C.INVALID_CONFIG),
    ],
)
def test_the_message_of_a_config_error_says_whose_value_was_refused(message: str, want: C) -> None:
    d = classify(_VLLM_CONFIG_TB + message, engine="vllm")
    assert d.category is want
    assert d.evidence[0].endswith(message[-30:])


@pytest.mark.parametrize(
    ("exception", "want"),
    [
        # a ValueError no rule knows: a refused value, the model's when the message names it
        ("ValueError: expected sliding_window to be set for every layer", C.MODEL_INCOMPATIBLE),
        ("ValueError: the served name 'x y' has a space in it", C.INVALID_CONFIG),
        ("NotImplementedError: paged KV for cross-attention", C.MODEL_INCOMPATIBLE),
    ],
)
def test_an_unknown_exception_is_read_by_its_type_not_as_a_crash(exception: str, want: C) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/app/server.py", line 10, in main\n'
        "    start()\n" + exception
    )
    d = classify(log, learned=False)
    assert d.category is want
    # the type of an exception names a kind of failure, not its cause: said as a guess
    assert d.guessing and d.confidence < 0.5


@pytest.mark.parametrize(
    "message",
    [
        "ValueError: Cannot use chat template functions because tokenizer.chat_template is not "
        "set and no template argument was passed!",
        "ValueError: As of transformers v4.44, default chat template is no longer allowed, so "
        "you must provide a chat template if the tokenizer does not define one.",
    ],
)
def test_a_missing_chat_template_is_the_models(message: str) -> None:
    # the tokenizer brings no template: the model's (the labelling convention reads the
    # tokenizer as the model's), with the flag that works around it in the remedy
    d = classify(
        "INFO 05-01 10:00:00 [serving_chat.py:1] chat request\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/transformers/tokenization_utils_base.py"'
        ", line 1621, in apply_chat_template\n" + message,
        engine="vllm",
    )
    assert d.category is C.MODEL_INCOMPATIBLE
    assert d.remedy and "--chat-template" in d.remedy


_PARSED = (
    "llama_model_loader: loaded meta data with 27 key-value pairs and 399 tensors from "
    "/models/m.gguf (version GGUF V3 (latest))\n"
    "llama_model_loader: - kv   0:                       general.architecture str = gemma3\n"
)


def test_llama_cpp_refusing_a_parsed_gguf_is_the_model_not_the_file() -> None:
    log = _PARSED + (
        "llama_model_load_from_file_impl: failed to load model\n"
        "common_init_from_params: failed to load model '/models/m.gguf'\n"
        "main: exiting due to model loading error\n"
    )
    d = classify(log, engine="llama.cpp", learned=False)
    assert d.category is C.MODEL_INCOMPATIBLE
    assert d.rule == "llama.cpp:refused-after-reading-the-gguf-header"
    assert d.guessing  # an inference from how far loading got, not a named cause


def test_a_bare_failed_to_load_model_is_a_guess() -> None:
    d = classify(
        "llama_model_load_from_file_impl: failed to load model\n", engine="llama.cpp", learned=False
    )
    assert d.category is C.MODEL_LOAD_FAILURE
    assert d.guessing


def test_llama_cpp_failing_to_open_the_file_stays_a_load_failure() -> None:
    log = (
        "gguf_init_from_file_impl: failed to open GGUF file '/models/m.gguf'\n"
        "llama_model_load: error loading model: llama_model_loader: failed to load model from "
        "/models/m.gguf\n"
        "llama_model_load_from_file_impl: failed to load model\n"
        "main: exiting due to model loading error\n"
    )
    assert classify(log, engine="llama.cpp").category is C.MODEL_LOAD_FAILURE
    # a damaged file after its header was read is still the file
    damaged = _PARSED + (
        "llama_model_load: error loading model: tensor 'blk.31.ffn_down.weight' data is not "
        "within the file bounds, model is corrupted or incomplete\n"
        "llama_model_load_from_file_impl: failed to load model\n"
    )
    assert classify(damaged, engine="llama.cpp").category is C.MODEL_LOAD_FAILURE


@pytest.mark.parametrize(
    "cause",
    [
        "gguf_init_from_file_impl: tensor 'blk.0.ffn_down_exps.weight' has invalid ggml type "
        "39 (NONE)\ngguf_init_from_file_impl: failed to read tensor info",
        "llama_model_load: error loading model: check_tensor_dims: tensor "
        "'blk.0.attn_q_norm.weight' not found",
    ],
)
def test_llama_cpp_names_a_tensor_this_build_does_not_know(cause: str) -> None:
    log = cause + "\nllama_model_load_from_file_impl: failed to load model\n"
    assert classify(log, engine="llama.cpp").category is C.MODEL_INCOMPATIBLE


def test_the_shell_reporting_a_killed_job_is_the_oom_killer() -> None:
    log = (
        "[2025-05-01 10:00:00] Load weight begin. avail mem=78.12 GB\n"
        "/usr/bin/bash: line 1:   123 Killed                  python3 -m "
        "sglang.launch_server --model-path /m\n"
    )
    d = classify(log, engine="sglang")
    assert d.category is C.OOM_HOST


def test_logger_lines_are_never_a_posted_answer() -> None:
    log = "\n".join(
        f"INFO 05-01 10:{m:02d}:00 [core.py:1] Waiting for core engine process to start..."
        for m in range(0, 30, 10)
    )
    d = classify(log, engine="vllm", learned=False)
    assert d.rule != "output:posted-answer"
    # the log stops on vLLM's own start-up phase: a stall, said as a guess
    assert d.category is C.STARTUP_TIMEOUT_OR_HANG and d.guessing


@pytest.mark.parametrize(
    ("engine", "log", "want"),
    [
        (
            "sglang",
            "[2025-01-01 10:00:00] Rank 0 scheduler is dead.\n"
            "[2025-01-01 10:00:00] Child process unexpectedly failed with exitcode=-9. pid=12",
            C.OOM_HOST,
        ),
        (
            "sglang",
            "AssertionError: fp8e4nv data type is not supported on CUDA arch < 89",
            C.UNSUPPORTED_HARDWARE,
        ),
        (
            "vllm",
            "vllm 0.6.3 requires torch==2.4.0, but you have torch 2.5.1 which is incompatible.",
            C.MISSING_DEPENDENCY,
        ),
        (
            "tgi",
            'docker: Error response from daemon: could not select device driver "" with '
            "capabilities: [[gpu]].",
            C.MISSING_DEPENDENCY,
        ),
        (
            "vllm",
            "OSError: Incorrect path_or_model_id: '/models/Llama-3-8B'. Please provide either "
            "the path to a local folder or the repo_id of a model on the Hub.",
            C.MODEL_LOAD_FAILURE,
        ),
        (
            "ollama",
            "verifying sha256 digest\nError: digest mismatch, file must be downloaded again",
            C.MODEL_LOAD_FAILURE,
        ),
        (
            "ollama",
            "pulling manifest\npulling 8eeb52dfb3bb...  43% 2.1 GB/4.7 GB\nError: unexpected EOF",
            C.MODEL_LOAD_FAILURE,
        ),
        (
            "trtllm",
            "FileNotFoundError: [Errno 2] No such file or directory: '/engines/llama/rank0.engine'",
            C.MODEL_LOAD_FAILURE,
        ),
        (
            "vllm",
            "(VllmWorker rank=1 pid=2) WARNING 05-01 10:00:00 [shm_broadcast.py:466] No available "
            "shared memory broadcast block found in 60 second. This typically happens when some "
            "processes are hanging.",
            C.STARTUP_TIMEOUT_OR_HANG,
        ),
        (
            "sglang",
            "ValueError: Unrecognized configuration class <class 'transformers.models.gemma3."
            "configuration_gemma3.Gemma3Config'> for this kind of AutoModel: AutoModelForCausalLM.",
            C.MODEL_INCOMPATIBLE,
        ),
    ],
)
def test_families_of_runtime_and_download_signals(engine: str, log: str, want: C) -> None:
    assert classify(log, engine=engine).category is want


def test_an_eof_outside_a_pull_is_not_a_download() -> None:
    # the rules' reading (the learned fallback, reading words alone, may name a load failure)
    d = classify("Error: unexpected EOF", engine="ollama", learned=False)
    assert d.category is not C.MODEL_LOAD_FAILURE


@pytest.mark.parametrize(
    ("engine", "log", "want"),
    [
        (
            "trtllm",
            "[TensorRT-LLM][ERROR] Encountered an error in forwardAsync function: "
            "[TensorRT-LLM][ERROR] Assertion failed: Input length (4096) + max new tokens "
            "(2048) has exceeded the maximum sequence length (4096).",
            C.INVALID_CONFIG,
        ),
        (
            "vllm",
            "ValueError: The decoder prompt (length 9000) is longer than the maximum model "
            "length of 8192. Make sure that `max_model_len` is no smaller than the number of "
            "text tokens.",
            C.INVALID_CONFIG,
        ),
        (
            "trtllm",
            "ValueError: max_num_tokens (8192) must be greater than or equal to max_seq_len",
            C.INVALID_CONFIG,
        ),
        (
            "tgi",
            "ERROR download: text_generation_launcher: Download encountered an error:\n"
            "Error: DownloadError",
            C.MODEL_LOAD_FAILURE,
        ),
        (
            "llama.cpp",
            "common_download_file_single: invalid http status code received: 404\n"
            "common_init_from_params: failed to load model",
            C.MODEL_LOAD_FAILURE,
        ),
        (
            "sglang",
            "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by "
            "other processes. min_per_gpu_memory=10.5, local_gpu_memory=78.2",
            C.OOM_GPU,
        ),
        (
            "vllm",
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method",
            C.INVALID_CONFIG,
        ),
        (
            "llama.cpp",
            "libc++abi: terminating due to uncaught exception of type std::runtime_error: "
            "bad diff\nAbort trap: 6",
            C.RUNTIME_CRASH,
        ),
        # a vLLM line whose poster cut the date: the exception is still read as one
        (
            "vllm",
            "(EngineCore pid=1) ERROR [core.py:708] ValueError: Unsupported model type `qwen3_moe`",
            C.MODEL_INCOMPATIBLE,
        ),
    ],
)
def test_families_of_lengths_downloads_and_process_signals(engine: str, log: str, want: C) -> None:
    assert classify(log, engine=engine).category is want


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Gemma3ForConditionalGeneration does not support LoRA yet.",
        "ValueError: Qwen2ForCausalLM has no vLLM implementation and the Transformers "
        "implementation is not compatible with vLLM.",
        "NotImplementedError: Pipeline parallelism is not supported for DeepseekV3ForCausalLM",
        "KeyError: 'Qwen3ForCausalLM'",  # an architecture missing from the engine's model map
    ],
)
def test_a_model_class_named_beside_a_refusal_is_the_model(line: str) -> None:
    d = classify(line)
    assert d.category is C.MODEL_INCOMPATIBLE
    assert d.rule == "ladder:model-class-refused"


def test_a_model_class_in_an_ordinary_line_is_no_signal() -> None:
    assert classify("INFO Loading LlamaForCausalLM weights took 3.2 s").label == "unknown"


def test_a_refusal_in_plain_words_is_never_a_posted_answer() -> None:
    log = (
        "the new qwen3 weights cannot be read by my install at all\n"
        "I tried two machines and both give the same thing every time\n"
    )
    d = classify(log, learned=False)  # the rules alone: the model may still guess a cause
    assert d.rule != "output:posted-answer"
    assert d.label == "unknown"
    # loose text without a refusal is still read as an answer someone posted
    answer = "Sure! Here is a poem about the sea and the sky and the waves and the wind,\n"
    assert classify(answer * 2).rule == "output:posted-answer"


@pytest.mark.parametrize(
    ("engine", "log", "want"),
    [
        (
            "ollama",
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No "
            "such file or directory for GPU arch : gfx1103",
            C.UNSUPPORTED_HARDWARE,
        ),
        (
            "llama.cpp",
            "ggml_metal_graph_compute: command buffer 0 failed with status 5\n"
            "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
            C.OOM_GPU,
        ),
        (
            "trtllm",
            "[TensorRT-LLM][ERROR] Assertion failed: Insufficient memory for KV cache: free "
            "memory 1.2 GiB, required 4.0 GiB",
            C.OOM_GPU,
        ),
        (
            "vllm",
            "OSError: [WinError 126] The specified module could not be found. Error loading "
            '"C:\\\\Python311\\\\Lib\\\\site-packages\\\\torch\\\\lib\\\\fbgemm.dll"',
            C.MISSING_DEPENDENCY,
        ),
        (
            "vllm",
            "ValueError: The current platform cpu does not support FlashAttention backend",
            C.UNSUPPORTED_HARDWARE,
        ),
        (
            "sglang",
            "AssertionError: The page size must be 1 when using MLA with the triton attention "
            "backend",
            C.INVALID_CONFIG,
        ),
        (
            "vllm",
            "INFO 05-01 10:00:00 [core_client.py:1] Waiting for 1 local, 0 remote core engine "
            "proc(s) to start.",
            C.STARTUP_TIMEOUT_OR_HANG,
        ),
    ],
)
def test_families_of_platforms_and_settings(engine: str, log: str, want: C) -> None:
    assert classify(log, engine=engine).category is want


@pytest.mark.parametrize(
    ("engine", "log", "want"),
    [
        ("ollama", 'Error: Post "http://127.0.0.1:11434/api/chat": EOF', C.RUNTIME_CRASH),
        (
            "vllm",
            "ValueError: Cannot use FlashAttention-2 backend for head size 72.",
            C.MODEL_INCOMPATIBLE,
        ),
        (
            "vllm",
            "ValueError: Cannot use FlashAttention-2 backend for Volta and Turing GPUs.",
            C.UNSUPPORTED_HARDWARE,
        ),
        (
            "vllm",
            "ValueError: The repository for /models/x contains custom code which must be "
            "executed to correctly load the model.\nPlease pass the argument "
            "`trust_remote_code=True` to allow custom code to be run.",
            C.INVALID_CONFIG,
        ),
        (
            "tgi",
            "RuntimeError: Cannot load `awq` weight, make sure the model is already quantized",
            C.MODEL_INCOMPATIBLE,
        ),
        ("sglang", "RuntimeError: Failed to allocate memory for KV cache", C.OOM_GPU),
    ],
)
def test_families_of_backends_remote_code_and_runners(engine: str, log: str, want: C) -> None:
    assert classify(log, engine=engine).category is want


@pytest.mark.parametrize(
    ("engine", "log", "want"),
    [
        (
            "vllm",
            "ValueError: enable_chunked_prefill is not allowed with sliding window disabled",
            C.INVALID_CONFIG,
        ),
        # a flag named in a ValueError: the setting, though its name holds "model"
        (
            "sglang",
            "ValueError: --speculative-draft-model-path and --speculative-algorithm NGRAM "
            "cannot both be set",
            C.INVALID_CONFIG,
        ),
        (
            "vllm",
            "ValueError: Only one of --quantization or --load-format bitsandbytes can be set",
            C.INVALID_CONFIG,
        ),
        (
            "sglang",
            "RuntimeError: ncclCommInitRank failed: unhandled system error",
            C.DISTRIBUTED_FAILURE,
        ),
        (
            "trtllm",
            "[TensorRT-LLM][INFO] Loaded engine size: 12345 MiB\n"
            "and then it hung forever, nothing after 30 minutes",
            C.STARTUP_TIMEOUT_OR_HANG,
        ),
        (
            "vllm",
            "INFO: task python3:4242 blocked for more than 120 seconds.",
            C.STARTUP_TIMEOUT_OR_HANG,
        ),
    ],
)
def test_families_of_settings_collectives_and_hangs(engine: str, log: str, want: C) -> None:
    assert classify(log, engine=engine).category is want


@pytest.mark.parametrize(
    ("engine", "log", "want"),
    [
        ("tgi", "Error: Shard process was signaled to shutdown with signal 9", C.OOM_HOST),
        (
            "vllm",
            "RuntimeError: Cannot find any model weights with `/models/x`",
            C.MODEL_LOAD_FAILURE,
        ),
        ("vllm", "ValueError: No supported config format found in /models/x", C.MODEL_LOAD_FAILURE),
        ("trtllm", "[TRT-LLM] [E] Failed to load tokenizer from /models/x", C.MODEL_LOAD_FAILURE),
        (
            "tgi",
            "ValueError: Tokenizer class Qwen2Tokenizer does not exist or is not currently "
            "imported.",
            C.MODEL_INCOMPATIBLE,
        ),
        ("vllm", "RuntimeError: Failed to infer device type", C.MISSING_DEPENDENCY),
        (
            "ollama",
            'error="llama runner process has terminated: error:Could not initialize Tensile '
            'host: No devices found"',
            C.MISSING_DEPENDENCY,
        ),
        (
            "sglang",
            "ValueError: --tp-size (3) must divide the number of attention heads (32)",
            C.INVALID_CONFIG,
        ),
    ],
)
def test_families_of_model_files_devices_and_shards(engine: str, log: str, want: C) -> None:
    assert classify(log, engine=engine).category is want


@pytest.mark.parametrize(
    ("engine", "log", "want"),
    [
        ("vllm", "RuntimeError: No CUDA GPUs are available", C.MISSING_DEPENDENCY),
        (
            "ollama",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
            C.MISSING_DEPENDENCY,
        ),
        (
            "tgi",
            "exec /usr/local/bin/text-generation-launcher: exec format error",
            C.UNSUPPORTED_HARDWARE,
        ),
        (
            "vllm",
            "PermissionError: [Errno 13] Permission denied: '/models/llama/config.json'",
            C.MODEL_LOAD_FAILURE,
        ),
    ],
)
def test_families_of_drivers_binaries_and_file_access(engine: str, log: str, want: C) -> None:
    assert classify(log, engine=engine).category is want


def test_per_rank_tags_are_logger_prefixes() -> None:
    # PyTorch tags every line of a rank's traceback: the final exception is still read
    log = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/opt/app/serve.py", line 10, in main\n'
        "[rank0]:     start()\n"
        "[rank0]: NotImplementedError: paged KV for cross-attention\n"
    )
    d = classify(log, learned=False)
    assert d.category is C.MODEL_INCOMPATIBLE
    assert d.rule == "ladder:not-implemented-for-the-model"
    tagged = "[1,0]<stderr>:/bin/sh: line 1:  77 Killed      python3 run.py --tp 2\n"
    assert classify(tagged, learned=False).category is C.OOM_HOST


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "2024-09-01T10:00:00.000000Z ERROR text_generation_launcher: Error when initializing",
            "Error when initializing",
        ),
        (
            "2024-05-01T01:17:12Z  INFO shard-manager: text_generation_launcher: Waiting for "
            "shard to be ready... rank=0",
            "Waiting for shard to be ready... rank=0",
        ),
        # the message's own first word is never taken for a target
        ("2025-01-01T10:00:00+00:00 RuntimeError: CUDA error", "RuntimeError: CUDA error"),
        ("2025-01-01T10:00:00Z ERROR error: bad value", "error: bad value"),
    ],
)
def test_iso_time_level_and_target_are_a_logger_prefix(line: str, message: str) -> None:
    assert content(line) == message


def test_an_error_line_no_rule_knows_is_a_guessed_crash() -> None:
    log = (
        "INFO 05-01 10:00:00 [api_server.py:1] starting\n"
        "ERROR 05-01 10:00:09 [engine.py:88] request loop stopped: widget state corrupt\n"
    )
    d = classify(log, engine="vllm")
    assert d.signal and d.category is C.RUNTIME_CRASH
    assert d.guessing
    assert "widget state corrupt" in d.evidence[0]


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("Floating point exception", C.RUNTIME_CRASH),
        ("Trace/breakpoint trap", C.RUNTIME_CRASH),
        ("zsh: killed     ./llama-server -m m.gguf", C.OOM_HOST),
        ("Killed: 9", C.OOM_HOST),
    ],
)
def test_how_the_shell_reports_a_process_death(line: str, want: C) -> None:
    assert classify(line).category is want


def test_a_warning_the_engine_lived_through_decides_only_as_a_guess() -> None:
    log = (
        "WARNING 05-01 10:00:00 [config.py:1] Sliding window is not supported for this "
        "model; disabling it\n"
        "INFO 05-01 10:00:01 [gpu_model_runner.py:1] Loading weights took 3.1 seconds\n"
    )
    d = classify(log, engine="vllm", learned=False)
    assert d.guessing


@pytest.mark.parametrize(
    "line",
    [
        "INFO Cascade attention is not supported for this model; disabling it",
        "INFO No chat template found, defaulting to chatml",
        "INFO rope_scaling type unknown, using the default",
        "INFO Gemma3ForConditionalGeneration does not support LoRA; disabling it",
    ],
)
def test_the_engine_carrying_on_is_not_a_refusal(line: str) -> None:
    assert classify(line, learned=False).label == "unknown"  # no rule reads it as refused


def test_ollama_refusing_a_model_too_large_for_the_host() -> None:
    log = (
        'time=2025-01-01T10:00:00Z level=INFO source=sched.go:1 msg="model request too large '
        'for system" requested="68.3 GiB" available=62.6 system="62.6 GiB"'
    )
    assert classify(log, engine="ollama").category is C.OOM_HOST
