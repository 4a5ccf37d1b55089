"""SGLang adapter: command line, GPUs, model check, flags, log and /server_info reading."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from bringup.engines.base import HealthState
from bringup.engines.registry import get_engine
from bringup.engines.sglang import SGLangAdapter, server_args_from_log
from bringup.errors import EngineNotInstalledError, ModelNotFoundError
from bringup.spec import Spec, parse_spec


def _spec(engine: str = 'name = "sglang"', model: str = "Qwen/Qwen3-8B", extra: str = "") -> Spec:
    return parse_spec(f'[engine]\n{engine}\n[model]\npath = "{model}"\n{extra}')


def _exe(path: Path, body: str = "print('hi')") -> Path:
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_registered_under_aliases() -> None:
    assert isinstance(get_engine("sglang"), SGLangAdapter)
    assert isinstance(get_engine("SGL"), SGLangAdapter)


def test_not_installed_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with pytest.raises(EngineNotInstalledError, match=r"pip install sglang.*engine\.binary"):
        SGLangAdapter().locate(_spec())


def test_bad_binary_is_named(tmp_path: Path) -> None:
    spec = _spec(f'name = "sglang"\nbinary = "{tmp_path}/nope/sglang"')
    with pytest.raises(EngineNotInstalledError, match="nope/sglang"):
        SGLangAdapter().locate(spec)


def test_console_script_gets_serve_and_python_gets_module(tmp_path: Path) -> None:
    script = _exe(tmp_path / "sglang")
    spec = _spec(f'name = "sglang"\nbinary = "{script}"')
    assert SGLangAdapter().locate(spec) == [str(script), "serve"]
    spec = _spec(f'name = "sglang"\nbinary = "{sys.executable}"')
    assert SGLangAdapter().locate(spec)[1:] == ["-m", "sglang.launch_server"]
    spec = _spec(f'name = "sglang"\nbinary = "{sys.executable} -m my.stand_in --world w.toml"')
    assert SGLangAdapter().locate(spec)[1:] == ["-m", "my.stand_in", "--world", "w.toml"]


def test_build_command_and_env(tmp_path: Path) -> None:
    script = _exe(tmp_path / "sglang")
    spec = _spec(
        f'name = "sglang"\nbinary = "{script}"\ngpus = [2, 3]',
        extra='[launch]\nargs = ["--tp-size", "2"]\n',
    )
    spec.model.name = "qwen"
    adapter = SGLangAdapter()
    argv = adapter.build_command(
        spec, {"--attention-backend": "fa3", "--disable-radix-cache": True}, "127.0.0.1", 31234
    )
    assert argv == [
        str(script), "serve", "--model-path", "Qwen/Qwen3-8B", "--served-model-name", "qwen",
        "--host", "127.0.0.1", "--port", "31234", "--tp-size", "2",
        "--attention-backend", "fa3", "--disable-radix-cache",
    ]  # fmt: skip
    assert adapter.env(spec, {})["CUDA_VISIBLE_DEVICES"] == "2,3"


def test_multi_value_flag_is_split_after_check(tmp_path: Path) -> None:
    adapter = SGLangAdapter()
    table = adapter.flag_table(_spec())
    argv = adapter.render(
        {"--cuda-graph-bs-decode": "1 2 4", "--json-model-override-args": '{"a": 1}'},
        table,
    )
    assert argv == [
        "--cuda-graph-bs-decode",
        "1",
        "2",
        "4",
        "--json-model-override-args",
        '{"a": 1}',
    ]


def test_model_check_accepts_hub_ids_and_refuses_missing_paths(tmp_path: Path) -> None:
    adapter = SGLangAdapter()
    adapter.check_model(_spec(model="nvidia/Qwen3.5-397B-A17B-NVFP4"))
    adapter.check_model(_spec(model=str(tmp_path)))
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        adapter.check_model(_spec(model=str(tmp_path / "missing" / "ckpt")))
    with pytest.raises(ModelNotFoundError):
        adapter.check_model(_spec(model="./models/local-only"))


def test_check_flags_uses_captured_help_when_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    spec = _spec(extra='[launch]\nargs = ["--mamba-scheduler-strategy", "extra_buffer"]\n')
    problems = SGLangAdapter().check_flags(spec, {"--kv-cache-dtype": "fp8"})
    flags = {p.flag for p in problems}
    assert flags == {"--mamba-scheduler-strategy", "--kv-cache-dtype"}
    assert all("SGLang is not installed here" in p.message for p in problems)
    kv = next(p for p in problems if p.flag == "--kv-cache-dtype")
    assert "fp8_e4m3" in (kv.replacement or "")


def test_gpu_count_is_checked_against_engine_gpus() -> None:
    spec = _spec('name = "sglang"\ngpus = [0, 1, 2, 3]')
    adapter = SGLangAdapter()
    [problem] = adapter.check_flags(spec, {"--tp": 8})
    assert problem.flag == "engine.gpus" and "8 GPUs" in problem.message
    assert adapter.check_flags(spec, {"--tp-size": 2, "--dp-size": 2}) == []
    assert adapter.check_flags(spec, {"--tp-size": 4, "--dp-size": 4, "--attn-dp-size": 4}) == []


SERVER_ARGS = (
    "server_args=ServerArgs(model_path='nvidia/Qwen3.5-397B-A17B-NVFP4', "
    "tokenizer_path='nvidia/Qwen3.5-397B-A17B-NVFP4', trust_remote_code=True, dtype='auto', "
    "kv_cache_dtype='bf16', quantization='modelopt_fp4', mem_fraction_static=0.85, tp_size=8, "
    "attention_backend=None, moe_runner_backend='flashinfer_cutlass', "
    "speculative_algorithm=None, cuda_graph_max_bs_decode=256, host='127.0.0.1', port=30000)"
)
SGLANG_LOG = "\n".join(
    [
        f"[2026-03-05 10:00:01] {SERVER_ARGS}",
        "[2026-03-05 10:00:05 TP0] Attention backend not specified. Use trtllm_mha backend by "
        "default.",
        "[2026-03-05 10:01:40 TP0] Load weight end. type=Qwen3_5MoeForCausalLM, "
        "dtype=torch.bfloat16, avail mem=21.73 GB, mem usage=66.59 GB.",
        "[2026-03-05 10:01:41 TP0] KV Cache is allocated. #tokens: 495104, K size: 10.2 GB",
        "[2026-03-05 10:01:42 DP0 TP0] Capture cuda graph bs [1, 2, 4, 8, 16]",
        "[2026-03-05 10:02:30] The server is fired up and ready to roll!",
    ]
)


def test_chosen_from_log() -> None:
    chosen = SGLangAdapter().chosen(SGLANG_LOG)
    assert chosen["attention_backend"] == "trtllm_mha"
    assert chosen["moe_runner_backend"] == "flashinfer_cutlass"
    assert chosen["kv_cache_dtype"] == "bf16"
    assert chosen["quantization"] == "modelopt_fp4"
    assert chosen["cuda_graph_max_bs_decode"] == "256"
    assert chosen["cuda_graph_bs"] == "[1, 2, 4, 8, 16]"
    assert chosen["kv_cache_tokens"] == "495104"
    assert chosen["model_dtype"] == "bfloat16"
    assert "model_path" not in chosen and "host" not in chosen
    assert "speculative_algorithm" not in server_args_from_log(SGLANG_LOG)


def test_ready_line_and_fatal_lines() -> None:
    import re

    adapter = SGLangAdapter()
    assert adapter.ready_pattern and re.search(adapter.ready_pattern, SGLANG_LOG)
    assert adapter.is_fatal("[2026-03-11 17:25:41] Scheduler hit an exception: Traceback")
    assert adapter.is_fatal("Initialization failed. warmup error: boom")
    assert not adapter.is_fatal("[2026-03-05 10:01:42 DP0 TP0] Capture cuda graph bs [1, 2]")


def test_server_info_and_health() -> None:
    adapter = SGLangAdapter()
    payload = {
        "attention_backend": "fa3",
        "kv_cache_dtype": "auto",
        "tp_size": 1,
        "model_path": "x",
        "version": "0.5.23",
        "internal_states": [{"max_total_num_tokens": 1000}],
    }
    chosen = adapter.chosen_from_info("/server_info", payload)
    assert chosen == {
        "attention_backend": "fa3",
        "kv_cache_dtype": "auto",
        "tp_size": "1",
        "max_total_num_tokens": "1000",
    }
    assert adapter.version_from_info("/server_info", payload) == "0.5.23"
    assert adapter.health_state(503, b"") is HealthState.LOADING
    assert adapter.health_state(200, b"") is HealthState.READY
    assert adapter.health_timeout_s > 20


def test_profiling_endpoints(tmp_path: Path) -> None:
    prof = SGLangAdapter().profiling(str(tmp_path))
    assert prof is not None and prof.start_path == "/start_profile"
    call = prof.start_request(num_steps=5)
    assert call.json_body == {
        "output_dir": str(tmp_path),
        "activities": ["CPU", "GPU"],
        "num_steps": 5,
    }
    assert prof.launch_env == {"SGLANG_TORCH_PROFILER_DIR": str(tmp_path)}
