"""The keyword gate in front of the rules never hides a line a rule would match."""

from __future__ import annotations

import json
from pathlib import Path

from bringup.diagnose.classifier import passes_gate
from bringup.diagnose.logtext import content
from bringup.diagnose.ruleset import ALL

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = Path("/work/shared/corpus/failure_logs.jsonl")

# one message per kind the rules are written for, beyond what the log corpora contain
SAMPLES = [
    "Out of memory: Killed process 4242 (python3) total-vm:1234kB",
    "DefaultCPUAllocator: not enough memory: you tried to allocate 1024 bytes",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 600000 ms",
    "FlashAttention only supports Ampere GPUs or newer.",
    "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
    "ValueError: Unrecognized model in /models/x. Should have a `model_type` key in its "
    "config.json",
    "GGML_ASSERT(ggml_nelements(a) == ne0*ne1) failed",
    "K cache type q4_0 with block size 32 does not divide n_embd_head_k=80",
    "SPLIT_MODE_TENSOR requires flash_attn to be enabled",
    "Error: listen tcp 127.0.0.1:11434: bind: address already in use",
    "The engine plan file is generated on an incompatible device, expecting compute 9.0",
    "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD",
    "<unk><unk><unk><unk><unk>",
    "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
    "Selected backend FLASHINFER is not valid for this configuration. Reason: "
    "['head_size not supported']",
    "Expected kv_lora_rank == 512, got 256",
    "Expected head dim 576 for query and kv_cache, got 512 and 512",
    "Head size 80 is not supported by FlashAttention. Supported head sizes are: [64, 128]",
    "trtllm_mha does not support kv cache dtype 'fp8_e5m2'. Supported: ['fp8_e4m3'].",
    "Page size 8 is not supported for trtllm_mha. It should be one of [16, 32, 64].",
    "pulling 8eeb52dfb3bb... unexpected EOF",
    "Child process unexpectedly exited, exitcode=-9",
    "the tokenizer has no chat template",
    "sliding window attention is not implemented for this model",
    "/bin/sh: line 1:  77 Killed      python3 -m vllm.entrypoints.openai.api_server",
    "Unknown RoPE scaling type longrope",
]


def _lines() -> list[str]:
    out = list(SAMPLES)
    paths = [FIXTURES / "diagnose_heldout.jsonl"] + ([CORPUS] if CORPUS.exists() else [])
    for path in paths:
        for row in path.read_text().splitlines():
            if row.strip():
                out += json.loads(row)["log"].splitlines()
    for log in FIXTURES.glob("llamacpp_*.log"):
        out += log.read_text(errors="replace").splitlines()
    return out


def test_every_rule_match_passes_the_gate() -> None:
    missed = []
    matched = 0
    for line in _lines():
        text = content(line)
        for rs in ALL.values():
            for r in rs.rules:
                if r.pattern.search(text):
                    matched += 1
                    if not passes_gate(text):
                        missed.append((r.name, line))
    assert matched > 100
    assert missed == []


def test_ordinary_lines_are_skipped() -> None:
    assert not passes_gate("filler line with some words in it")
    assert not passes_gate("INFO:     Uvicorn running on http://127.0.0.1:8000")


def test_a_rule_whose_own_text_lacks_every_gate_word_still_fires() -> None:
    # neither line holds a gate word; each rule's literal text is enough to run it
    from bringup.diagnose import classify

    assert not passes_gate("Some GPUs may be occupied by other processes.")
    d = classify("Some GPUs may be occupied by other processes.", engine="sglang")
    assert d.rule == "sglang:gpu-memory-unbalanced"
    d = classify("the server freezes at loading the weights, nothing after it")
    assert d.rule == "ladder:hang-evidence"
