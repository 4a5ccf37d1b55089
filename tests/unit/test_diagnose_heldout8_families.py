"""Families of failure wording read from the retired heldout8 round, on synthetic lines.

Each family is a kind of message (a ROCm library without kernels for this ``gfx`` target, a
CPU without the build's instruction set, a context too small for the requests, a port past
65535, pip's conflicts, Ollama's server relaying its runner, a wrapped vLLM memory check,
advice that mentions running out of memory), checked on lines written for the test, with
near misses that must not be read as the family.
"""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.verdict import Category as C


def _rules(log: str, engine: str | None = None) -> tuple[str, float]:
    d = classify(log, engine=engine, learned=False)
    return d.label, d.confidence


@pytest.mark.parametrize(
    "line",
    [
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary_gfx1036.dat",
        "hipblaslt error: could not load /usr/lib/hipblaslt/TensileLibrary_lazy_gfx1103.dat",
        "hipBLASLt error: Heuristic Fetch Failed!",
        '{"status": "No supported GPUs", "message": "No compatible ROCm GPUs found on device"}',
    ],
)
def test_rocm_libraries_without_this_gfx_target(line: str) -> None:
    label, conf = _rules(line)
    assert label == C.UNSUPPORTED_HARDWARE.value
    assert conf >= 0.5


@pytest.mark.parametrize(
    "line",
    [
        "loaded TensileLibrary.dat for every target in 2.1 s",
        "No supported GPUs needed for the CPU backend, continuing",
    ],
)
def test_rocm_near_misses(line: str) -> None:
    assert _rules(line)[0] != C.UNSUPPORTED_HARDWARE.value


@pytest.mark.parametrize(
    "line",
    [
        "this release is built with AVX512 instructions which are not available on this box",
        "error: AVX2 is not supported on this CPU",
        "onednn: Unable to get JIT kernel for brgemm (m=32, n=64)",
    ],
)
def test_cpu_without_the_build_instruction_set(line: str) -> None:
    label, conf = _rules(line)
    assert label == C.UNSUPPORTED_HARDWARE.value
    assert conf >= 0.5


def test_poster_words_about_the_cpu_are_a_guess() -> None:
    label, conf = _rules("The server exits right away. I don't have AVX-512 on this laptop.")
    assert label == C.UNSUPPORTED_HARDWARE.value
    assert conf < 0.5


@pytest.mark.parametrize(
    "line",
    [
        "AVX512 is not available on this CPU, falling back to the AVX2 kernels",
        "system_info: AVX = 1 | AVX2 = 1 | AVX512 = 0 | FMA = 1",
    ],
)
def test_cpu_near_misses(line: str) -> None:
    assert _rules(line)[0] != C.UNSUPPORTED_HARDWARE.value


@pytest.mark.parametrize(
    "line",
    [
        "decode: could not find a KV slot for the batch (reduce the batch or raise the context)",
        "llama_decode: failed to find a memory slot for batch of size 2048",
        "srv  send_error: task id = 7, error: Context size has been exceeded.",
        "slot update_slots: id 1 | context shift is disabled, cannot continue",
        "llama.cpp:20112: Qwen3Next does not support K-shift",
    ],
)
def test_context_too_small_for_the_work(line: str) -> None:
    label, conf = _rules(line, "llama.cpp")
    assert label == C.INVALID_CONFIG.value
    assert conf >= 0.5


def test_context_shift_working_is_no_failure() -> None:
    assert _rules("slot 0: context shift - n_keep = 12, n_left = 500, n_discard = 250")[0] != (
        C.INVALID_CONFIG.value
    )


@pytest.mark.parametrize(
    "line",
    [
        "OverflowError: bind(): port must be 0-65535.",
        "error: port 123456 is out of range",
        "ValueError: port number must be between 0 and 65535",
    ],
)
def test_port_outside_the_range(line: str) -> None:
    d = classify(line, learned=False)
    assert d.label == C.INVALID_CONFIG.value
    assert d.confidence >= 0.5
    assert "--port" in d.flags


def test_port_in_range_is_not_refused() -> None:
    assert _rules("INFO: Uvicorn running on http://0.0.0.0:65535")[0] != C.INVALID_CONFIG.value


@pytest.mark.parametrize(
    "line",
    [
        "ERROR: pip's dependency resolver does not currently take into account all the "
        "packages that are installed.",
        "fooengine 1.2.0 requires numpy<2, but you have numpy 2.1.3 which is incompatible.",
        "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/",
    ],
)
def test_pip_conflicts(line: str) -> None:
    assert _rules(line)[0] == C.MISSING_DEPENDENCY.value


def test_pip_success_is_no_conflict() -> None:
    assert _rules("Successfully installed numpy-2.1.3 torch-2.5.1")[0] != (
        C.MISSING_DEPENDENCY.value
    )


def test_ollama_server_cannot_load_its_model_is_a_guess() -> None:
    label, conf = _rules(
        "Error: 500 Internal Server Error: unable to load model: /m/blobs/x", "ollama"
    )
    assert label == C.MODEL_INCOMPATIBLE.value
    assert conf < 0.5


def test_ollama_unable_to_load_with_a_named_cause() -> None:
    log = (
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "Error: 500 Internal Server Error: unable to load model\n"
    )
    assert _rules(log, "ollama")[0] == C.OOM_GPU.value


def test_ollama_template_for_another_release() -> None:
    line = 'Error: template: :3:9: executing "" at <.Tools>: can\'t evaluate field Tools in type'
    assert _rules(line, "ollama")[0] == C.MODEL_INCOMPATIBLE.value


def test_ollama_runner_stopped_is_a_guessed_crash() -> None:
    label, conf = _rules(
        "Error: model runner has unexpectedly stopped, this may be due to resource limits",
        "ollama",
    )
    assert label == C.RUNTIME_CRASH.value
    assert conf < 0.5


@pytest.mark.parametrize(
    "log",
    [
        "(EngineCore pid=9) ValueError: To serve at least one request with the model's max "
        "seq len (65536), (3.50 GiB KV cach\ne is needed, which is larger than the available",
        "ValueError: Free memory on device (10.1/79.2 GiB) on startup is less than desired\n"
        "GPU memory utilization (0.9, 71.3 GiB).",
    ],
)
def test_wrapped_vllm_memory_checks(log: str) -> None:
    assert _rules(log, "vllm")[0] == C.OOM_GPU.value


@pytest.mark.parametrize(
    "line",
    [
        "Free NPU memory: 3.2 GiB. EL0004: Failed to apply for memory. Check the remaining space.",
        "Memory access fault by GPU node-2 (Agent handle: 0x55d) on address 0x7f. Reason: "
        "Page not present or supervisor privilege.",
        "[  812.1] amdgpu 0000:83:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:40 vmid:2)",
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        "[rank3]:[E1201 10:00:00.1 ProcessGroupNCCL.cpp:1] [PG ID 0 Rank 3]  failure detected "
        "by watchdog at work sequence id: 12",
    ],
)
def test_named_runtime_faults(line: str) -> None:
    want = {
        "Failed to apply": C.OOM_GPU,
        "Memory access": C.RUNTIME_CRASH,
        "amdgpu": C.RUNTIME_CRASH,
        "probability": C.RUNTIME_CRASH,
        "watchdog": C.DISTRIBUTED_FAILURE,
    }
    expected = next(v for k, v in want.items() if k in line)
    assert _rules(line)[0] == expected.value


def test_model_architecture_not_recognized_by_name() -> None:
    line = "the bundled backend does not recognize the `foo-moe2` architecture"
    assert _rules(line)[0] == C.MODEL_INCOMPATIBLE.value


def test_router_health_check_pending() -> None:
    line = "[Router] INFO - Worker http://10.0.0.2:30001 health check is pending with error"
    assert _rules(line)[0] == C.STARTUP_TIMEOUT_OR_HANG.value


def test_ray_compiled_graph_channel_frames() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/srv/py/ray/dag/compiled_dag_node.py", line 10, in execute\n'
        "    self._read()\n"
        '  File "/srv/py/ray/experimental/channel/common.py", line 20, in _read_list\n'
        "    c.read(timeout)\n"
    )
    label, conf = _rules(log)
    assert label == C.DISTRIBUTED_FAILURE.value
    assert conf < 0.5


@pytest.mark.parametrize(
    "line",
    [
        "INFO model_runner.py:9] Graphs take extra memory. If you are running out of memory, "
        "consider a lower utilization.",
        "Tip: to avoid out of memory errors, lower --max-num-seqs.",
    ],
)
def test_advice_about_memory_is_no_oom(line: str) -> None:
    assert _rules(line)[0] != C.OOM_GPU.value


def test_oom_still_read_beside_advice_words() -> None:
    assert _rules("RuntimeError: the worker ran out of memory while loading")[0] == (
        C.OOM_GPU.value
    )


def test_deprecation_notice_is_no_missing_package() -> None:
    line = "WARNING: you are using a deprecated `oldpkg` package. Please install `newpkg` instead."
    assert _rules(line)[0] != C.MISSING_DEPENDENCY.value


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (
            '"ImportError: /opt/x/lib/libfoo_ops.so: Undefined Symbol" when building',
            C.MISSING_DEPENDENCY,
        ),
        ("Bug: Device Lost on the second GPU with the Vulkan backend", C.RUNTIME_CRASH),
        ("after 2000 requests the server stucks and answers nothing", C.STARTUP_TIMEOUT_OR_HANG),
    ],
)
def test_named_faults_in_other_spellings(line: str, want: C) -> None:
    assert _rules(line)[0] == want.value


def test_device_lost_near_miss() -> None:
    assert _rules("the phone's device lost connection to wifi, retrying")[0] != (
        C.RUNTIME_CRASH.value
    )


def test_environment_listing_is_no_posted_answer() -> None:
    log = (
        "- CPU kind: aarch64\n- Host RAM: 128GB\n- Accelerator: SomeGPU 48GB\n"
        "- Engine release: 9.9.9.dev1\n- Kernel driver: 999.1\n- Distro: Linux 1.0 LTS\n"
    )
    assert _rules(log)[0] != C.GARBAGE_OUTPUT.value
