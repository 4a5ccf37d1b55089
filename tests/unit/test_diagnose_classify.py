"""The classifier against the failure corpus, a held-out set written from engine sources,
and the rules that do not depend on either (exit status, tracebacks, remedies, redaction)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bringup.diagnose import classify
from bringup.verdict import Category, Stage

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = Path("/work/shared/corpus/failure_logs.jsonl")


def _load(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _accuracy(cases: list[dict[str, object]], *, with_engine: bool) -> float:
    right = 0
    for case in cases:
        engine = str(case["engine"]) if with_engine else None
        code = case.get("exit_code")
        d = classify(
            str(case["log"]), engine=engine, exit_code=code if isinstance(code, int) else None
        )
        right += d.category.value == case["category"]
    return right / len(cases)


@pytest.mark.skipif(not CORPUS.exists(), reason="failure corpus not present")
def test_corpus_accuracy_target() -> None:
    assert _accuracy(_load(CORPUS), with_engine=True) >= 0.95


@pytest.mark.parametrize("with_engine", [True, False])
def test_heldout_logs_from_engine_sources(with_engine: bool) -> None:
    cases = _load(FIXTURES / "diagnose_heldout.jsonl")
    assert len(cases) >= 25
    assert _accuracy(cases, with_engine=with_engine) >= 0.90


def test_evidence_is_verbatim_and_decisive() -> None:
    log = (
        "INFO 01-01 00:00:00 [core.py:1] starting\n"
        "(EngineCore_DP0 pid=7) ERROR 01-01 00:00:01 [core.py:708] torch.OutOfMemoryError: "
        "CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    d = classify(log, engine="vllm", exit_code=1)
    assert d.category is Category.OOM_GPU
    assert d.evidence[0] in log.splitlines()
    assert "OutOfMemoryError" in d.evidence[0]
    assert d.remedy and "--max-num-seqs" in d.remedy
    assert 0.5 < d.confidence <= 1.0


@pytest.mark.parametrize(
    ("code", "category"),
    [
        (-9, Category.OOM_HOST),
        (137, Category.OOM_HOST),
        (139, Category.RUNTIME_CRASH),
        (-6, Category.RUNTIME_CRASH),
        (132, Category.UNSUPPORTED_HARDWARE),
    ],
)
def test_exit_status_alone(code: int, category: Category) -> None:
    d = classify("loading model\n", engine="llama.cpp", exit_code=code)
    assert d.category is category
    assert any(str(code) in line for line in d.evidence)


def test_clear_log_beats_sigkill() -> None:
    log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n"
    assert classify(log, exit_code=-9).category is Category.OOM_GPU


def test_no_evidence_still_running_is_a_hang() -> None:
    d = classify("Load weight begin. avail mem=70 GB\n", engine="sglang", stage=Stage.LAUNCHING)
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert d.stage_reached == "loading weights"


def test_no_evidence_after_exit_is_a_crash() -> None:
    d = classify("hello\n", exit_code=0)
    assert d.category is Category.RUNTIME_CRASH
    assert d.confidence < 0.5


@pytest.mark.parametrize(
    "line",
    [
        "vllm serve: error: unrecognized arguments: --foo",
        "sglang serve: error: argument --attention-backend: invalid choice: 'x' (choose from ...)",
        "sglang serve: error: ambiguous option: --tp could match --tp-size, --tp-rank",
        "trtllm-serve: error: the following arguments are required: MODEL",
    ],
)
def test_argparse_errors(line: str) -> None:
    assert classify(line + "\n", exit_code=2).category is Category.INVALID_CONFIG


def test_frame_decides_a_plain_keyerror() -> None:
    in_loader = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/vllm/model_executor/models/llama.py", line 9, in load_weights\n'
        "    param = params_dict[name]\n"
        "KeyError: 'layers.0.mlp.weight_scale'\n"
    )
    elsewhere = in_loader.replace("load_weights", "handle_request")
    assert (
        classify(in_loader, engine="vllm", exit_code=1, learned=False).category
        is Category.MODEL_INCOMPATIBLE
    )
    assert (
        classify(elsewhere, engine="vllm", exit_code=1, learned=False).category
        is Category.RUNTIME_CRASH
    )


def test_remedy_uses_numbers_from_the_message() -> None:
    log = (
        "ValueError: To serve at least one request with the models's max seq len (40960), "
        "(10.00 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(1.25 GiB). Based on the available memory, the estimated maximum model length is "
        "5120. Try increasing `gpu_memory_utilization`\n"
    )
    d = classify(log, engine="vllm", exit_code=1)
    assert d.category is Category.OOM_GPU
    assert d.remedy and "5120" in d.remedy


def test_engine_aliases_agree() -> None:
    log = "Serialization assertion stdVersionRead == kSERIALIZATION_VERSION failed.\n"
    a = classify(log, engine="tensorrt-llm", exit_code=1)
    b = classify(log, engine="trtllm", exit_code=1)
    assert a.category is b.category is Category.MISSING_DEPENDENCY


def test_secrets_are_redacted_from_evidence() -> None:
    log = "OSError: 401 Client Error for repo with token=hf_abcdefghijklmnopqrstuvwxyz123456\n"
    d = classify(log, exit_code=1)
    assert d.category is Category.MODEL_LOAD_FAILURE
    assert all("hf_abcdefghij" not in line for line in d.evidence)


def test_rank_duplicates_collapse_in_evidence() -> None:
    log = "".join(
        f"[2025-07-02 07:41:59 DP{r} TP{r}] max_total_tokens=131072 is larger than the profiled "
        "value -561981. Use the profiled value instead.\n"
        for r in range(8)
    )
    d = classify(log, engine="sglang")
    assert d.category is Category.OOM_GPU
    assert len(d.evidence) == 1


def test_huge_log_is_trimmed_but_keeps_the_end() -> None:
    log = "INFO filler line\n" * 50_000 + "RuntimeError: NCCL error: unhandled system error\n"
    assert classify(log, exit_code=1).category is Category.DISTRIBUTED_FAILURE


def test_benign_noise_does_not_outweigh_the_cause() -> None:
    log = (
        "(EngineCore pid=1) WARNING 01-01 10:00:00 [utils.py:1] Failed to import from "
        "vllm._C: No module named 'vllm._C.foo'\n"
        "host:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. dlerror=libnccl-net"
        ".so: cannot open shared object file: No such file or directory\n"
        "host:1:1 [0] NCCL WARN NET/Plugin: Failed to find ncclNetPlugin_v8 symbol\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    d = classify(log, engine="vllm", exit_code=1)
    assert d.category is Category.RUNTIME_CRASH
    assert d.evidence[0].endswith("an illegal memory access was encountered")


def test_running_engine_with_only_weak_errors_is_hanging() -> None:
    log = "ERROR something optional failed\nLoading safetensors checkpoint shards: 10%\n"
    d = classify(log, engine="vllm", learned=False)
    assert d.category is Category.STARTUP_TIMEOUT_OR_HANG
    assert d.stage_reached == "loading weights"


def test_equal_best_hits_agree_on_the_rule_and_the_guess() -> None:
    # two hits of one category with the same score: the earliest decides both the rule shown
    # and whether the answer is a guess (it is picked once)
    from bringup.diagnose.classifier import _decided, _Hit
    from bringup.verdict import Category

    lines = ["first line", "second line"]
    cause = _Hit(Category.RUNTIME_CRASH, 3.0, 0, None, rule="a:cause")
    kind = _Hit(Category.RUNTIME_CRASH, 3.0, 1, None, rule="a:kind", prior=True)
    d = _decided(Category.RUNTIME_CRASH, [kind, cause], lines, None, 0.8)
    assert d.rule == "a:cause" and d.confidence == 0.8
