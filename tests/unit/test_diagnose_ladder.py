"""The general ladder of signals: no catch-all that lies, an explicit unknown, remedies and
evidence from the rule that fired. Synthetic logs written for these tests, plus fit cases of
bench/data/diagnose (never the held-out file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bringup.diagnose import classify
from bringup.diagnose.outputtext import output_signals
from bringup.diagnose.pytrace import embedded_exception, failed_importing, read_tracebacks
from bringup.verdict import Category, Stage

FIT = Path(__file__).parents[2] / "bench" / "data" / "diagnose" / "fit.jsonl"


def _fit(case_id: str) -> dict[str, object]:
    for row in FIT.read_text().splitlines():
        case = json.loads(row)
        if case["id"] == case_id:
            return dict(case)
    raise AssertionError(f"{case_id} is not in fit.jsonl")


_QUIET = "INFO 01-01 10:00:00 [api_server.py:1] args: model=x\nINFO config=loaded\n"


def test_no_signal_is_unknown_not_a_hang() -> None:
    d = classify(_QUIET)
    assert not d.signal
    assert d.label == "unknown"
    assert d.guessing and d.confidence < 0.5
    assert d.to_dict()["category"] == "unknown"
    assert d.to_dict()["guessing"] is True
    assert d.explain().startswith("unknown: no failure signal")


def test_unknown_needs_an_unknown_exit() -> None:
    # the same text from a trial: still running is a hang, exited is a crash
    text = _QUIET
    assert classify(text, stage=Stage.READY).category is Category.STARTUP_TIMEOUT_OR_HANG
    exited = classify(text, exit_code=1)
    assert exited.signal and exited.category is Category.RUNTIME_CRASH and exited.guessing


def test_a_log_that_stops_on_a_startup_phase_is_a_stall() -> None:
    log = "INFO starting\nINFO Loading safetensors checkpoint shards: 50% Completed | 2/4\n"
    d = classify(log, engine="vllm")
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert d.stage_reached == "loading weights"


def test_hang_words_are_evidence_of_a_hang() -> None:
    log = (
        "2024-05-01T01:17:12Z  INFO shard-manager: text_generation_launcher: Waiting for "
        "shard to be ready... rank=0\n"
        "2024-05-01T01:17:22Z  INFO text_generation_launcher: Successfully downloaded weights.\n"
    )
    d = classify(log)
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert "Waiting for shard" in d.evidence[0]


@pytest.mark.parametrize(
    ("log", "category"),
    [
        # the final exception's type decides when no engine wording does
        (
            "AttributeError: module 'transformers.modeling_utils' has no attribute 'Conv1D'",
            Category.MISSING_DEPENDENCY,
        ),
        (
            "TypeError: build_client() got an unexpected keyword argument 'stat_loggers'",
            Category.MISSING_DEPENDENCY,
        ),
        ("AttributeError: 'NoneType' object has no attribute 'cpu'", Category.RUNTIME_CRASH),
        ("NameError: name 'vllm_ops' is not defined", Category.MISSING_DEPENDENCY),
        # signals written in the log
        ("./chat -m model.bin\nloading model\nIllegal instruction", Category.UNSUPPORTED_HARDWARE),
        (
            "ERROR shard-manager: Shard process was signaled to shutdown with signal 4 rank=0",
            Category.UNSUPPORTED_HARDWARE,
        ),
        # argument validation, whatever the parser
        (
            "error: invalid value 'True' for '--disable-custom-kernels'\n"
            "  [possible values: true, false]",
            Category.INVALID_CONFIG,
        ),
        ("./model.llamafile: --host unknown argument", Category.INVALID_CONFIG),
        ("flag provided but not defined: -ctx", Category.INVALID_CONFIG),
        (
            'ArgumentValidation("`max_input_tokens`(65537) must be < `max_total_tokens`(65536)")',
            Category.INVALID_CONFIG,
        ),
        (
            "ValueError: The input (85050 tokens) is longer than the model's context length "
            "(32768 tokens).",
            Category.INVALID_CONFIG,
        ),
        # allocators, loaders, drivers
        (
            "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to "
            "decrease `--max-batch-prefill-tokens`",
            Category.OOM_GPU,
        ),
        (
            "[TRT] [E] [resizePhysical::151] Error Code 2: OutOfMemory (Requested size was "
            "16654532608 bytes.)",
            Category.OOM_GPU,
        ),
        (
            "Error: Unable to load dynamic library: /tmp/x/libext_server.so: failed to map "
            "segment from shared object",
            Category.MISSING_DEPENDENCY,
        ),
        # model files: a refused format version vs a file that is not a model
        (
            "error loading model: unknown (magic, version) combination: 46554747, 00000003; "
            "is this really a GGML file?\nllama_load_model_from_file: failed to load model",
            Category.MODEL_INCOMPATIBLE,
        ),
        (
            "transferring model data\ncreating model layer\nError: invalid file magic",
            Category.MODEL_LOAD_FAILURE,
        ),
        (
            "RuntimeError: weight model.layers.0.self_attn.q_proj.weight does not exist",
            Category.MODEL_INCOMPATIBLE,
        ),
        ("Error: llama runner process no longer running: -1", Category.RUNTIME_CRASH),
        # CUDA error names and exit codes that say more than "it failed"
        ("AssertionError: Torch not compiled with CUDA enabled", Category.MISSING_DEPENDENCY),
        ("RuntimeError: CUDA error: invalid device ordinal", Category.INVALID_CONFIG),
        (
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
            "135168, Hardware limit: 101376",
            Category.UNSUPPORTED_HARDWARE,
        ),
        ("server process exited with code 139", Category.RUNTIME_CRASH),
        (
            "TimeoutError: timed out after 600 s waiting for the workers",
            Category.STARTUP_TIMEOUT_OR_HANG,
        ),
        (
            "AttributeError: 'LlamaConfig' object has no attribute 'rope_theta'",
            Category.MODEL_INCOMPATIBLE,
        ),
        (
            "gguf_init_from_file_impl: tensor 'blk.0.attn_q.weight' has invalid ggml type 39",
            Category.MODEL_INCOMPATIBLE,
        ),
        (
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for TorchLlmArgs\n"
            "max_batch_size\n  Input should be a valid integer [type=int_parsing]",
            Category.INVALID_CONFIG,
        ),
        # an unknown wording still says which part refused
        ("ValueError: rope type 'yarn2' is not supported", Category.MODEL_INCOMPATIBLE),
        ("ValueError: invalid value for option scheduling_policy", Category.INVALID_CONFIG),
        ("OSError: tokenizer file does not exist in /models/x", Category.MODEL_LOAD_FAILURE),
    ],
)
def test_general_signals(log: str, category: Category) -> None:
    d = classify(log + "\n")
    assert d.category is category, d.explain()
    assert d.signal


def test_remedy_belongs_to_the_rule_that_fired() -> None:
    prefill = classify(
        "RuntimeError: Not enough memory to handle 1024 prefill tokens. You need to decrease "
        "`--max-batch-prefill-tokens`\n"
    )
    assert prefill.remedy and "--max-batch-prefill-tokens" in prefill.remedy
    sigill = classify("Illegal instruction (core dumped)\n")
    assert sigill.remedy and "CPU" in sigill.remedy
    context = classify(
        "ValueError: This model's maximum context length is 8192 tokens. However, you "
        "requested 8203 tokens.\n",
        engine="vllm",
    )
    assert context.remedy and "context" in context.remedy


def test_a_traceback_cut_after_its_raise_line_still_decides() -> None:
    log = (
        '  File "/opt/conda/lib/python3.10/site-packages/text_generation_server/models/'
        '__init__.py", line 1064, in get_model\n'
        '    raise NotImplementedError("sharded is not supported for AutoModel")\n'
    )
    (tb,) = read_tracebacks(log.splitlines())
    assert tb.exc_type == "NotImplementedError"
    assert tb.exc_message == "sharded is not supported for AutoModel"
    assert classify(log).category is Category.MODEL_INCOMPATIBLE


def test_an_exception_while_importing_is_a_dependency() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/app/sglang/srt/patches.py", line 50, in apply_all\n'
        "    import transformers  # noqa: F401\n"
        '  File "/usr/lib/python3/dist-packages/transformers/__init__.py", line 795, in '
        "<module>\n"
        "    sys.modules[__name__] = _LazyModule(\n"
        '  File "/usr/lib/python3/dist-packages/transformers/utils/import_utils.py", line '
        "2100, in __init__\n"
        "    raise ValueError(\n"
        "ValueError: Backend should be defined in the BACKENDS_MAPPING.\n"
    )
    (tb,) = read_tracebacks(log.splitlines())
    assert failed_importing(tb)
    assert classify(log).category is Category.MISSING_DEPENDENCY
    # the same exception raised while serving is not an install problem
    running = log.replace("    import transformers  # noqa: F401\n", "    run()\n")
    assert not failed_importing(read_tracebacks(running.splitlines())[0])


@pytest.mark.parametrize(
    "log",
    [
        '"predictions": [{"text": "", "raw_text": "", "logprob": 0, "tokens": []}]}',
        'Parsed message: {"role":"assistant","content":"GGG"}',
        'Output: "chef in a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a"',
        "And fear fear fear fear fear fear fear fear fear fear fear fear fear fear fea",
    ],
)
def test_answers_in_the_log_are_judged_as_output(log: str) -> None:
    d = classify(log + "\n")
    assert d.category is Category.GARBAGE_OUTPUT
    assert d.evidence == [log]


def test_traceback_source_and_separators_are_not_answers() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/x/llama_cpp/llama.py", line 305, in __init__\n'
        "    assert self.model is not None\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^\n"
        "--------------------------------------------------------------------------\n"
        "AssertionError\n"
    )
    assert output_signals(log.splitlines()) == []


@pytest.mark.parametrize(
    ("case_id", "category"),
    [
        ("vllm-gaudi-fork-transformers-conv1d-attributeerror", "missing_dependency"),
        ("tgi-docker-shard-signal-4-sigill", "unsupported_hardware"),
        ("tgi-awq-warmup-not-enough-memory-prefill-tokens", "oom_gpu"),
        ("ollama-create-mlx-safetensors-finetune-invalid-magic", "model_load_failure"),
        ("vllm-cogagent-openai-server-empty-text-one-token", "garbage_output"),
        ("trtllm-source-tree-import-bindings-datatype", "missing_dependency"),
        ("vllm-gguf-pipeline-parallel-hangs-after-pynccl", "startup_timeout_or_hang"),
    ],
)
def test_fit_cases(case_id: str, category: str) -> None:
    case = _fit(case_id)
    code = case.get("exit_code")
    d = classify(
        str(case["log"]),
        engine=str(case["engine"]),
        exit_code=code if isinstance(code, int) else None,
    )
    assert d.label == category
    assert all(
        line in str(case["log"]).splitlines() or line.startswith("stage reached")
        for line in d.evidence
    )


def test_confidence_follows_the_strength_of_the_evidence() -> None:
    strong = classify("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB\n")
    weak = classify("Error: llama runner process has terminated: exit status 2\n")
    none = classify(_QUIET)
    assert strong.confidence > weak.confidence > none.confidence
    assert not strong.guessing and none.guessing
    assert "guessing" not in strong.explain()


def test_cli_says_when_it_is_guessing() -> None:
    from click.testing import CliRunner

    from bringup.cli.diagnose_cmd import diagnose

    text = CliRunner().invoke(diagnose, ["-"], input=_QUIET)
    assert text.exit_code == 0, text.output
    assert text.output.startswith("unknown: no failure signal in the log")
    weak = CliRunner().invoke(diagnose, ["-", "--exit-code", "1"], input=_QUIET)
    assert "guessing" in weak.output.splitlines()[0]
    data = json.loads(CliRunner().invoke(diagnose, ["-", "--json"], input=_QUIET).output)
    assert data["category"] == "unknown" and data["guessing"] is True


def test_a_log_of_loose_text_is_read_as_a_posted_answer_and_guessed() -> None:
    log = (
        "User: Hello\n\nLlama3: Hello!\n\nWhat is your name?\nThe\nLlama3\n"
        " bot responds with a greeting and then asks the user for their name.\n"
    )
    d = classify(log, learned=False)  # the rules' own reading (the fallback may back it)
    assert d.category is Category.GARBAGE_OUTPUT
    assert d.guessing and d.signal
    assert d.evidence[0].startswith("the log is loose text")


@pytest.mark.parametrize(
    "name",
    [
        "llamacpp_healthy.log",
        "llamacpp_healthy_verbose.log",
        "diagnose_chosen_llamacpp.log",
        "diagnose_chosen_sglang.log",
        "diagnose_chosen_vllm.log",
        "vllm026_h200_reference.log",
    ],
)
def test_healthy_engine_logs_raise_no_signal(name: str) -> None:
    text = (Path(__file__).parent / "fixtures" / name).read_text(errors="replace")
    engine = next((e for e in ("vllm", "sglang") if e in name), "llama.cpp")
    d = classify(text, engine=engine, stage=Stage.READY)  # still running, nothing wrong
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG, d.explain()
    assert output_signals(text.splitlines()) == []


@pytest.mark.parametrize(
    ("line", "category"),
    [
        (
            "thread 'main' panicked at 'Unable to warmup model', router/src/main.rs:216:18",
            "runtime_crash",
        ),
        (
            "panic: runtime error: invalid memory address or nil pointer dereference",
            "runtime_crash",
        ),
        (
            "Gloo connectFullMesh failed with [../gloo/transport/tcp/pair.cc:144] no error",
            "distributed_failure",
        ),
        (
            "requires 210571452800 bytes of scratch space, but only 47697362944 is available",
            "oom_gpu",
        ),
        ("error: failed to allocate 4096.00 MiB of pinned memory", "oom_host"),
        ("llama_init_from_model: failed to allocate buffer for kv cache", "oom_gpu"),
        ("When I load the 70B model it runs out of VRAM and crashes.", "oom_gpu"),
        ("The server gets OOM killed by the kernel after a few requests.", "oom_host"),
        (
            "the agent gets an infinite output of '/' characters whatever the prompt",
            "garbage_output",
        ),
        ("The model repeats the same sentence endlessly.", "garbage_output"),
        ("Model is too large to fit in the available memory", "oom_gpu"),
        (
            "ERROR: Could not find a version that satisfies the requirement vllm==0.9.9",
            "missing_dependency",
        ),
        (
            "RuntimeError: CUDA error: too many resources requested for launch",
            "unsupported_hardware",
        ),
        (
            "ggml_cuda_compute_forward: ADD failed\nCUDA error: invalid configuration argument",
            "runtime_crash",
        ),
        (
            "Failed to start server: timeout waiting for server to become healthy",
            "startup_timeout_or_hang",
        ),
    ],
)
def test_general_signals_name_the_kind_of_failure(line: str, category: str) -> None:
    assert classify(line).label == category


def test_kernel_oom_killer_line_is_not_read_as_gpu_memory() -> None:
    d = classify("Out of memory: Killed process 4242 (python3) total-vm:1234kB")
    assert d.category is Category.OOM_HOST


def test_a_traceback_cut_before_its_exception_is_read_by_its_frames_as_a_guess() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/worker/worker.py", line 71, in init_model\n'
        "    _check_if_gpu_supports_dtype(self.model_config.dtype)\n"
        '  File "/x/vllm/worker/worker.py", line 231, in _check_if_gpu_supports_dtype\n'
    )
    d = classify(log, engine="vllm", learned=False)
    assert d.category is Category.UNSUPPORTED_HARDWARE
    assert d.confidence < 0.5  # where it stopped is a kind of failure, not its cause


def test_mpi_frames_of_a_crash_dump_are_a_guessed_distributed_failure() -> None:
    log = (
        "[host:1447852] [ 9] /lib/x86_64-linux-gnu/libmpi.so.40(ompi_request_default_wait+0x24b)\n"
        "[host:1447852] [13] /lib/x86_64-linux-gnu/libmpi.so.40(MPI_Bcast+0x121)[0x7fc1ff32d881]\n"
    )
    d = classify(log, engine="trtllm", learned=False)  # the rules' own guess
    assert d.category is Category.DISTRIBUTED_FAILURE
    assert d.confidence < 0.5


def test_a_thread_dump_stopped_in_a_collective_is_a_guessed_distributed_failure() -> None:
    log = (
        'Thread 16 (Thread 0x7f08 (LWP 1705707) "executionLoop"):\n'
        "#6  0x00007f1431c6674d in cudaStreamQuery () from /x/libnvinfer_plugin_tensorrt_llm.so\n"
        "#7  0x00007f1431bdb43b in tensorrt_llm::plugins::AllgatherPlugin::enqueue() from /x\n"
    )
    d = classify(log, engine="trtllm", learned=False)  # the rules' own guess
    assert d.category is Category.DISTRIBUTED_FAILURE
    assert d.confidence < 0.5


@pytest.mark.parametrize(
    ("line", "quoted"),
    [
        (
            "I got this error for org/model-32b: ValueError: x was given without y",
            "ValueError: x was given without y",
        ),
        (
            "vllm raises `torch.OutOfMemoryError: CUDA out of memory` on load",
            "torch.OutOfMemoryError: CUDA out of memory` on load",
        ),
        ("ValueError: the line is itself an exception", None),
        ("the ValueErrors in this report are not lines", None),
        ("raise ValueError(f'bad {x}')", None),
    ],
)
def test_an_exception_quoted_in_a_sentence_is_found(line: str, quoted: str | None) -> None:
    assert embedded_exception(line) == quoted


def test_a_sentence_quoting_an_exception_is_read_as_that_exception() -> None:
    exc = "ValueError: num_speculative_tokens was provided without speculative_config"
    said = f"I got this error for org/some-32b: {exc}"
    d = classify(said, engine="vllm", learned=False)
    assert d.label == Category.INVALID_CONFIG.value and d.signal
    assert d.label == classify(exc, engine="vllm", learned=False).label
