"""Families of failure wording read from the retired heldout10 and heldout11 rounds, on
synthetic lines.

Each family is a kind of message (an error of the transport between disaggregated instances,
a client's read that timed out, a GGUF without tensors, a tensor type the build does not
recognise, a device buffer of a backend that names its buffer type without the ggml prefix, a
CPU without AVX and AVX2 that crashed, an assertion naming a batch setting or a maximum in
words, a division by zero or tensors of sizes that must match, a collective whose ranks
disagree on sizes, a model type registered twice with transformers, a poster saying the
memory is not sufficient), checked on lines written for the test, with near misses that
must not be read as the family.
"""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.verdict import Category as C


@pytest.mark.parametrize(
    ("log", "category"),
    [
        (
            "[1712000000.1] [host:77:0] ucp_ep.c:99 UCX ERROR send to peer failed: Endpoint "
            "timeout",
            C.DISTRIBUTED_FAILURE,
        ),
        # the NIC's resources, not the GPU's memory
        (
            "[1712000000.1] [host:77:0] ib_iface.c:12 UCX ERROR ibv_create_cq(cqe=1024) "
            "failed: Out of memory",
            C.DISTRIBUTED_FAILURE,
        ),
        (
            "kv transfer: NIXL_ERR_REMOTE_DISCONNECT while posting the request",
            C.DISTRIBUTED_FAILURE,
        ),
        (
            'Error: Post "http://127.0.0.1:11434/api/generate": read tcp '
            "127.0.0.1:40000->127.0.0.1:11434: read: ETIMEDOUT",
            C.STARTUP_TIMEOUT_OR_HANG,
        ),
        (
            "request to http://localhost:8080/v1/chat failed, reason: read ETIMEDOUT",
            C.STARTUP_TIMEOUT_OR_HANG,
        ),
        (
            "llama_model_loader: loaded meta data with 18 key-value pairs and 0 tensors from "
            "/models/vocab-only.gguf (version GGUF V3 (latest))",
            C.MODEL_LOAD_FAILURE,
        ),
        ("gguf_init: unrecognized tensor type 31 for tensor blk.0.attn_q", C.MODEL_INCOMPATIBLE),
        (
            "ggml_opencl: opencl_buffer_type_alloc_buffer: failed to allocate 4096.00 MiB\n"
            "llama_model_load: error loading model",
            C.OOM_GPU,
        ),
        (
            "system_info: n_threads = 4 | AVX = 0 | AVX_VNNI = 0 | AVX2 = 0 | F16C = 0 |\n"
            "Illegal instruction (core dumped)",
            C.UNSUPPORTED_HARDWARE,
        ),
        (
            'GGML_ASSERT(cparams.n_ubatch >= n_tokens && "the encoder needs the whole input '
            'in one ubatch") failed',
            C.INVALID_CONFIG,
        ),
        (
            "[TensorRT-LLM][ERROR] Assertion failed: Number of beams (8) is larger than "
            "maximum number of beams (4)",
            C.INVALID_CONFIG,
        ),
        ("Failed to start model server: integer division or modulo by zero", C.RUNTIME_CRASH),
        (
            "error: The size of tensor a (1024) must match the size of tensor b (512) at "
            "non-singleton dimension 0",
            C.RUNTIME_CRASH,
        ),
        (
            "RuntimeError: output tensor must be world_size times the size of the input in "
            "all_gather_into_tensor",
            C.DISTRIBUTED_FAILURE,
        ),
        (
            "ValueError: 'some_vl' is already used by a Transformers config, pick another name.",
            C.MISSING_DEPENDENCY,
        ),
        ("On two GPUs the memory is not sufficient for this model, on four it loads", C.OOM_GPU),
    ],
)
def test_families_of_heldout10_and_heldout11(log: str, category: C) -> None:
    d = classify(log, learned=False)
    assert d.label == category.value
    assert d.confidence >= 0.5


@pytest.mark.parametrize(
    ("log", "not_category"),
    [
        # a CPU buffer that did not allocate is host memory, whatever the prefix
        ("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate 9000 MiB", C.OOM_GPU),
        # a connection that could not be opened is not a server that did not answer
        ("dial tcp 10.1.2.3:443: i/o timeout", C.STARTUP_TIMEOUT_OR_HANG),
        # a CPU without AVX that runs is no failure
        (
            "system_info: AVX = 0 | AVX2 = 0 | FMA = 0\nserver is listening on 127.0.0.1:8080",
            C.UNSUPPORTED_HARDWARE,
        ),
        # a kernel's own maximum in an assertion is a crash, not a setting
        ("GGML_ASSERT(max_blocks_per_sm > 0) failed", C.INVALID_CONFIG),
    ],
)
def test_near_misses(log: str, not_category: C) -> None:
    assert classify(log, learned=False).label != not_category.value
