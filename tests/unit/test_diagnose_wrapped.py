"""A wrapper exception and the message it wraps: the message names the cause.

Excerpts of vLLM 0.26.0's whole logs from docs/gpu/vllm-h200-failures/ (one deliberate
fault each): pydantic's ``ValidationError: 1 validation error for ParallelConfig`` only says
a settings model refused something; the lines under it say what, and decide.
"""

from __future__ import annotations

from bringup.diagnose import classify
from bringup.diagnose.logtext import log_lines
from bringup.diagnose.pytrace import final_exception_lines, read_tracebacks
from bringup.verdict import Category

_API = "(APIServer pid=1886) "
_FRAMES = "".join(
    _API + line + "\n"
    for line in (
        "Traceback (most recent call last):",
        '  File "/root/v/site/vllm/engine/arg_utils.py", line 2108, in create_engine_config',
        "    parallel_config = ParallelConfig(",
        '  File "/root/v/site/pydantic/_internal/_dataclasses.py", line 121, in __init__',
        "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)",
    )
)


def _wrapped(model: str, *message: str) -> str:
    body = "".join(_API + line + "\n" for line in message)
    return (
        _FRAMES
        + f"{_API}pydantic_core._pydantic_core.ValidationError: 1 validation error for {model}\n"
        + body
        + f"{_API}    For further information visit https://errors.pydantic.dev/2.14/v/value_error\n"
    )


RAY = _wrapped(
    "ParallelConfig",
    "  Value error, Failed to import Ray: No module named 'ray'.Please install Ray with `pip "
    "install ray`. [type=value_error, input_value=ArgsKwargs((), {'pipeline...'}), "
    "input_type=ArgsKwargs]",
)
ARCHITECTURE = _wrapped(
    "ModelConfig",
    "  Value error, Model architectures ['Gemma3FlashMoeForCausalLM'] are not supported for "
    "now. Supported architectures: dict_keys(['AfmoeForCausalLM', 'ApertusForCausalLM']) "
    "[type=value_error, input_value=ArgsKwargs((), {'model': '/m'}), input_type=ArgsKwargs]",
)
TP2 = _wrapped(
    "ParallelConfig",
    "  Value error, World size (2) is larger than the number of available GPUs (1) in this "
    "node. If this is intentional and you are using:",
    "- ray, set '--distributed-executor-backend ray'.",
    "- multiprocessing, set '--nnodes' appropriately. [type=value_error, input_value="
    "ArgsKwargs((), {'pipeline...'}), input_type=ArgsKwargs]",
)
SEQS_ZERO = _wrapped(
    "SchedulerConfig",
    "max_num_seqs",
    "  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, "
    "input_type=int]",
)
BATCHED_BELOW_LEN = _wrapped(
    "SchedulerConfig",
    "  Value error, max_num_batched_tokens (64) is smaller than max_model_len (8192). This "
    "effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM "
    "reject longer sequences. [type=value_error, input_value=ArgsKwargs(()), input_type="
    "ArgsKwargs]",
)
# a validator's words that no rule knows: the refusal is all the log says
UNKNOWN_REFUSAL = _wrapped(
    "SchedulerConfig",
    "  Value error, the frobnication window (3) and the glide path (5) disagree "
    "[type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]",
)


def test_the_wrapped_message_is_part_of_the_final_exception() -> None:
    lines = log_lines(TP2)
    (tb,) = read_tracebacks(lines)
    header = next(i for i, ln in enumerate(lines) if "validation error for" in ln)
    assert tb.exc_index == header
    # the refused value and its run-on lines, up to pydantic's link; all of one record
    assert tb.message_lines == list(range(header + 1, len(lines)))
    assert set(tb.message_lines) <= final_exception_lines([tb])


def test_the_wrapped_message_ends_where_another_record_starts() -> None:
    lines = log_lines(RAY + _API + "INFO 12-03 17:49:18 [launcher.py:40] stopping\n")
    (tb,) = read_tracebacks(lines)
    assert "Value error, Failed to import Ray" in lines[tb.message_lines[0]]
    assert tb.message_lines[-1] == len(lines) - 2  # pydantic's link, not the INFO line


def test_the_wrapped_message_ends_with_its_last_error() -> None:
    lines = log_lines(RAY + _API + "words of the same process after the errors\n")
    (tb,) = read_tracebacks(lines)
    assert tb.message_lines[-1] == len(lines) - 2


def test_a_missing_library_inside_the_wrapper_is_a_missing_library() -> None:
    d = classify(RAY, engine="vllm", exit_code=1)
    assert d.category is Category.MISSING_DEPENDENCY, d.explain()
    assert "Failed to import Ray" in d.evidence[0]
    assert d.confidence >= 0.7


def test_an_unknown_architecture_inside_the_wrapper_is_the_models() -> None:
    d = classify(ARCHITECTURE, engine="vllm", exit_code=1)
    assert d.category is Category.MODEL_INCOMPATIBLE, d.explain()
    assert "Model architectures ['Gemma3FlashMoeForCausalLM']" in d.evidence[0]


def test_more_ranks_than_visible_gpus_is_a_refused_parallel_size() -> None:
    d = classify(TP2, engine="vllm", exit_code=1)
    assert d.category is Category.INVALID_CONFIG, d.explain()
    assert "World size (2)" in d.evidence[0]
    assert d.remedy and "need 2 GPUs but 1 are visible" in d.remedy


def test_a_value_the_settings_model_refuses_stays_invalid_config() -> None:
    for log in (SEQS_ZERO, BATCHED_BELOW_LEN):
        d = classify(log, engine="vllm", exit_code=1)
        assert d.category is Category.INVALID_CONFIG, d.explain()
        assert d.confidence >= 0.7  # the refused value is named: a cause, not a guess


def test_a_wrapped_refusal_no_rule_knows_is_a_guessed_invalid_config() -> None:
    d = classify(UNKNOWN_REFUSAL, engine="vllm", exit_code=1, learned=False)
    assert d.category is Category.INVALID_CONFIG, d.explain()
    assert d.confidence < 0.5  # the wrapper names only a kind of failure


def test_the_wrapper_alone_is_a_guess() -> None:
    d = classify(
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n",
        engine="vllm",
        exit_code=1,
    )
    assert d.category is Category.INVALID_CONFIG
    assert d.confidence < 0.5


_CORE = "(EngineCore pid=1851) ERROR 12-03 17:49:16 [core.py:1330] "
_INIT_FAILED = (
    "(APIServer pid=1781) RuntimeError: Engine core initialization failed. See root cause "
    "above. Failed core proc(s): {}\n"
)


def _no_backend(reasons: str) -> str:
    return (
        f"{_CORE}ValueError: No valid attention backend found for cuda with "
        "AttentionSelectorConfig(head_size=256, dtype=torch.bfloat16, kv_cache_dtype=auto, "
        f"block_size=7, use_mla=False). Reasons: {{{reasons}}}.\n" + _INIT_FAILED
    )


def test_a_block_size_every_backend_refuses_is_the_flag() -> None:
    log = _no_backend(
        "FLASH_ATTN: [block_size not supported], FLASHINFER: [ImportError], TRITON_ATTN: "
        "[block_size not supported], FLEX_ATTENTION: [block_size not supported], TURBOQUANT: "
        "[kv_cache_dtype not supported, block_size not supported, sliding window not supported]"
    )
    d = classify(log, engine="vllm", exit_code=1)
    assert d.category is Category.INVALID_CONFIG, d.explain()
    assert d.rule == "vllm:no-backend-takes-flag"


def test_backends_refusing_the_models_shape_stay_the_models() -> None:
    log = _no_backend(
        "FLASH_ATTN: [head_size not supported], TRITON_ATTN: [block_size not supported]"
    )
    d = classify(log, engine="vllm", exit_code=1)
    assert d.category is Category.MODEL_INCOMPATIBLE, d.explain()


def test_engine_core_initialization_failed_is_a_consequence() -> None:
    alone = classify(_INIT_FAILED, engine="vllm", exit_code=1)
    assert alone.category is Category.RUNTIME_CRASH and alone.confidence < 0.5
    # with the root cause above it, the cause decides
    d = classify(
        f"{_CORE}ModuleNotFoundError: No module named 'flashinfer'\n" + _INIT_FAILED,
        engine="vllm",
        exit_code=1,
    )
    assert d.category is Category.MISSING_DEPENDENCY
