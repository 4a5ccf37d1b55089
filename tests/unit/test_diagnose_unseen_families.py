"""Signal families of the second rule round of 2026-12-06 (written once heldout7 was retired):
an engine object without a field it reads, a build that cannot find the CUDA toolkit, a Metal
library the GPU cannot initialise, ranks stuck setting up, model paths that are folders, and a
reporter's words for a taken port or a process killed for memory. The log lines here are
written for the tests, not copied from any corpus."""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.diagnose.diagnosis import GUESS_BELOW
from bringup.verdict import Category


@pytest.mark.parametrize(
    ("log", "category", "rule"),
    [
        (
            "-- The CUDA compiler identification is unknown\nCMake Error at CMakeLists.txt:9 "
            "(enable_language):\n  No CMAKE_CUDA_COMPILER could be found.",
            Category.MISSING_DEPENDENCY,
            None,
        ),
        (
            "-- Could not find nvcc, please set CUDAToolkit_ROOT.\n"
            "CMake Warning:\n  CUDA not found",
            Category.MISSING_DEPENDENCY,
            None,
        ),
        (
            'CMake Error: Target "ggml-cuda" links to:\n    CUDA::cublasLt\n  but the target '
            "was not found.",
            Category.MISSING_DEPENDENCY,
            None,
        ),
        (
            "ggml_metal_init: error: failed to initialize the Metal library\n"
            "llama_init_from_model: failed to initialize the context",
            Category.UNSUPPORTED_HARDWARE,
            "runtime-no-code-for-this-device",
        ),
        (
            "rank 0: the launch is stuck at 'Init torch distributed begin.' on the second node",
            Category.DISTRIBUTED_FAILURE,
            "stuck-setting-up-the-ranks",
        ),
        (
            'Error: {"error":"read /srv/models/qwen-7b: is a directory"}',
            Category.MODEL_LOAD_FAILURE,
            "model-files-missing",
        ),
        (
            "ollama create mario -f Modelfile\nError: no safetensors or torch files found",
            Category.MODEL_LOAD_FAILURE,
            "model-files-missing",
        ),
    ],
)
def test_a_family_member_decides(log: str, category: Category, rule: str | None) -> None:
    d = classify(log, learned=False)
    assert d.category == category, (d.category, d.rule, d.evidence)
    if rule is not None:
        assert d.rule is not None and d.rule.endswith(f":{rule}")


def test_an_engine_object_without_a_field_is_a_guessed_crash() -> None:
    d = classify(
        "AttributeError: 'SpecDecodeProposer' object has no attribute 'hidden_states'",
        learned=False,
    )
    assert d.category == Category.RUNTIME_CRASH
    assert d.confidence < GUESS_BELOW


@pytest.mark.parametrize(
    "line",
    [
        "AttributeError: module 'torch.library' has no attribute 'custom_op'",
        "AttributeError: type object 'Tokenizer' has no attribute 'from_config'",
        "AttributeError: TokenizersBackend has no attribute all_special_tokens_extended",
    ],
)
def test_a_module_or_class_without_a_name_is_still_version_skew(line: str) -> None:
    assert classify(line, learned=False).category == Category.MISSING_DEPENDENCY


@pytest.mark.parametrize(
    ("log", "category"),
    [
        ("[Bug]: occasional ZMQ port conflict between two API servers", Category.PORT_IN_USE),
        ("the server dies: killed due to high memory usage", Category.OOM_HOST),
    ],
)
def test_a_reporters_words_are_a_guess(log: str, category: Category) -> None:
    d = classify(log, learned=False)
    assert d.category == category, (d.category, d.rule)
    assert d.confidence < GUESS_BELOW


def test_an_oom_seen_in_the_kernels_log_is_the_hosts() -> None:
    d = classify("the build stopped, and in dmesg it was probably an OOM", learned=False)
    assert d.category == Category.OOM_HOST and d.rule == "ladder:message-host-memory-ran-out"


def test_a_hang_after_the_ranks_are_up_is_still_a_hang() -> None:
    d = classify(
        "NCCL INFO init done\nINFO: all ranks ready\nthe server is stuck at warmup forever",
        learned=False,
    )
    assert d.category == Category.STARTUP_TIMEOUT_OR_HANG
