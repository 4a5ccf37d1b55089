"""Pruning reads the failure, not the engine's echo of its own arguments; OOM respects
the declared memory order."""

from __future__ import annotations

from bringup.plan.pruning import is_args_echo, rule_from
from bringup.plan.space import SearchSpace
from bringup.spec import Config, parse_spec
from bringup.verdict import Category, Stage, TrialResult

SPEC = """
[engine]
name = "vllm"
[model]
path = "m"
[space]
"--attention-backend" = ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN"]
"--kv-cache-dtype" = ["auto", "fp8"]
"--max-num-seqs" = [64, 256, 512]
[reference]
"--attention-backend" = "FLASH_ATTN"
"--kv-cache-dtype" = "auto"
"--max-num-seqs" = 64
{extra}
"""
VLLM_ECHO = (
    "INFO 12-01 10:02:11 [utils.py:233] non-default args: {'model': 'm', "
    "'attention_backend': 'FLASHINFER', 'kv_cache_dtype': 'fp8', 'max_num_seqs': 256}"
)
SGLANG_ECHO = (
    "[2026-12-01 10:02:11] server_args=ServerArgs(model_path='m', attention_backend='FLASHINFER'"
    ", kv_cache_dtype='fp8', max_running_requests=256, mem_fraction_static=0.9)"
)


def space(extra: str = "") -> SearchSpace:
    return SearchSpace(parse_spec(SPEC.format(extra=extra)))


def failed(config: Config, category: Category, lines: list[str]) -> TrialResult:
    return TrialResult(trial_id="t1", flags=dict(config)).fail(Stage.READY, category, lines)


def test_args_echo_lines_are_recognised() -> None:
    assert is_args_echo(VLLM_ECHO) and is_args_echo(SGLANG_ECHO)
    assert is_args_echo("Namespace(model='m', kv_cache_dtype='fp8')")
    assert is_args_echo(
        "Initializing a V1 LLM engine (v0.26.0) with config: model='m', kv_cache_dtype=fp8"
    )
    assert not is_args_echo("ValueError: kv_cache_dtype fp8 is not supported with FLASHINFER")
    assert not is_args_echo("Capture cuda graph begin. This can take up to several minutes.")


def test_a_hang_after_the_args_echo_blames_the_departure_not_every_flag_echoed() -> None:
    config: Config = {
        "--attention-backend": "FLASHINFER",
        "--kv-cache-dtype": "auto",
        "--max-num-seqs": 64,
    }
    for echo in (VLLM_ECHO, SGLANG_ECHO):
        r = failed(config, Category.STARTUP_TIMEOUT_OR_HANG, [echo, "Capture cuda graph begin."])
        rule = rule_from(r, config, space(), [])
        # only the departure is blamed, in the context it failed in
        assert rule is not None and rule.culprits == ("--attention-backend",), echo
        assert rule.contextual and rule.combo == config, echo


def test_the_failure_line_itself_still_names_its_flags() -> None:
    config: Config = {
        "--attention-backend": "FLASHINFER",
        "--kv-cache-dtype": "fp8",
        "--max-num-seqs": 64,
    }
    lines = [
        VLLM_ECHO,
        "ValueError: attention backend FLASHINFER does not support kv_cache_dtype fp8",
    ]
    rule = rule_from(failed(config, Category.INVALID_CONFIG, lines), config, space(), [])
    assert rule is not None
    assert rule.combo == {"--attention-backend": "FLASHINFER", "--kv-cache-dtype": "fp8"}


def test_oom_with_a_memory_order_prunes_only_the_hungrier_direction() -> None:
    """An OOM at 512 sequences with auto (16-bit) KV: fp8 KV needs less memory, so 512 with
    fp8 stays open; 512 with auto, on any backend, is pruned."""
    s = space('[plan]\nmemory_order = {"--kv-cache-dtype" = ["fp8", "auto"]}\n')
    config: Config = {
        "--attention-backend": "FLASH_ATTN",
        "--kv-cache-dtype": "auto",
        "--max-num-seqs": 512,
    }
    oom = failed(config, Category.OOM_GPU, ["torch.OutOfMemoryError: CUDA out of memory"])
    rule = rule_from(oom, config, s, [])
    assert rule is not None
    hit = [c for c in s.candidates if rule.matches(c, s)]
    assert hit and all(c["--max-num-seqs"] == 512 and c["--kv-cache-dtype"] == "auto" for c in hit)
    assert {c["--attention-backend"] for c in hit} == {"FLASH_ATTN", "FLASHINFER", "TRITON_ATTN"}
    assert not rule.matches({**config, "--kv-cache-dtype": "fp8"}, s)
    assert not rule.matches({**config, "--max-num-seqs": 256}, s)


def test_an_unexplained_drift_widens_to_what_two_failed_contexts_share() -> None:
    from bringup.plan.pruning import widen

    sp = space()
    first: Config = {
        "--attention-backend": "FLASH_ATTN",
        "--kv-cache-dtype": "fp8",
        "--max-num-seqs": 64,
    }
    second: Config = {**first, "--max-num-seqs": 512}
    drift = ["mean |delta logprob| 0.210 vs reference (limit 0.100)"]
    a = rule_from(failed(first, Category.ACCURACY_REGRESSION, drift), first, sp, [])
    b = rule_from(failed(second, Category.ACCURACY_REGRESSION, drift), second, sp, [])
    assert a is not None and b is not None and a.contextual and b.contextual
    # one failure prunes only its own context: fp8 with another backend stays open
    other_backend = {**first, "--attention-backend": "FLASHINFER"}
    assert not a.matches(other_backend, sp)
    wider = widen(b, [a], sp)
    assert wider is not None
    assert wider.combo == {"--attention-backend": "FLASH_ATTN", "--kv-cache-dtype": "fp8"}
    assert wider.matches({**first, "--max-num-seqs": 256}, sp)
    assert not wider.matches(other_backend, sp)
    # a context-free cause named by the evidence prunes the value at once
    named = ["ValueError: kv_cache_dtype fp8 is not supported"]
    c = rule_from(failed(first, Category.RUNTIME_CRASH, named), first, sp, [])
    assert c is not None and not c.contextual and c.combo == {"--kv-cache-dtype": "fp8"}


def test_an_oom_with_a_16_bit_kv_cache_leaves_fp8_at_the_same_size_open() -> None:
    sp = space()
    config: Config = {
        "--attention-backend": "FLASH_ATTN",
        "--kv-cache-dtype": "auto",
        "--max-num-seqs": 512,
    }
    oom = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB."]
    rule = rule_from(failed(config, Category.OOM_GPU, oom), config, sp, [])
    assert rule is not None
    assert rule.matches({**config, "--attention-backend": "FLASHINFER"}, sp)
    assert not rule.matches({**config, "--kv-cache-dtype": "fp8"}, sp)  # half the bytes
    assert not rule.matches({**config, "--max-num-seqs": 256}, sp)


def test_two_crashes_that_different_rules_explain_never_widen_each_other() -> None:
    from bringup.plan.pruning import widen

    sp = space()
    first: Config = {
        "--attention-backend": "FLASH_ATTN",
        "--kv-cache-dtype": "fp8",
        "--max-num-seqs": 64,
    }
    second: Config = {**first, "--max-num-seqs": 512}
    crash = ["the engine exited with status -11"]

    def crashed(config: Config, rule: str) -> TrialResult:
        result = failed(config, Category.RUNTIME_CRASH, crash)
        assert result.failure is not None
        result.failure.rule = rule
        return result

    a = rule_from(crashed(first, "vllm:illegal memory access"), first, sp, [])
    b = rule_from(crashed(second, "generic:segfault"), second, sp, [])
    assert a is not None and b is not None and a.contextual and b.contextual
    # two causes: what the two contexts happen to share is the culprit of neither
    assert widen(b, [a], sp) is None
    same = rule_from(crashed(second, "vllm:illegal memory access"), second, sp, [])
    assert same is not None
    wider = widen(same, [a], sp)
    assert wider is not None and wider.cause == "vllm:illegal memory access"
    assert wider.combo == {"--attention-backend": "FLASH_ATTN", "--kv-cache-dtype": "fp8"}
