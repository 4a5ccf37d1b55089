"""The platform and prose rungs of the ladder: wrappers' lines decide, the reporter's words
only guess, and neither outweighs an engine line that names the cause."""

from __future__ import annotations

import pytest

from bringup.diagnose import classify
from bringup.verdict import Category


@pytest.mark.parametrize(
    ("log", "category"),
    [
        (
            "Aug 08 09:02:33 host systemd[1]: ollama.service: main process exited, "
            "code=exited, status=127/n/a",
            Category.MISSING_DEPENDENCY,
        ),
        (
            "Jul 28 08:28:30 host ollama[74021]: Error: could not create directory mkdir "
            "/var/lib/ollama: permission denied",
            Category.INVALID_CONFIG,
        ),
        (
            "[libprotobuf ERROR text_format.cc:335] Error parsing text-format "
            "inference.ModelConfig: 29:17: Expected integer, got: $\n"
            "E0617 model_repository_manager.cc:1335] Poll failed for model directory "
            "'tensorrt_llm': failed to read text proto from tensorrt_llm/config.pbtxt",
            Category.INVALID_CONFIG,
        ),
        (
            "INFO 05-14 04:44:35 [__init__.py:243] No platform detected, vLLM is running "
            "on UnspecifiedPlatform",
            Category.MISSING_DEPENDENCY,
        ),
        (
            "(Exit code: 132). Please check settings and try loading the model again.",
            Category.UNSUPPORTED_HARDWARE,
        ),
    ],
)
def test_a_wrapper_line_decides(log: str, category: Category) -> None:
    d = classify(log)
    assert d.category is category
    assert d.confidence >= 0.5


@pytest.mark.parametrize(
    ("log", "category"),
    [
        (
            "When I'ved tested it with about 1000 requests, it hangs. The server logging "
            "messages don't refresh again.",
            Category.STARTUP_TIMEOUT_OR_HANG,
        ),
        ("24G的显存当使用vllm加载模型时，提示显存不足，应该怎么优化模型参数", Category.OOM_GPU),
        ("你好，我在尝试vllm推理时，但是50g显存为什么都会报错out of memory", Category.OOM_GPU),
        (
            "When I run ollama serve it tries to find the GPU but ultimately falls back to CPU",
            Category.MISSING_DEPENDENCY,
        ),
        (
            "The results are incorrect with every prompt I tried, the text is repetitive",
            Category.GARBAGE_OUTPUT,
        ),
    ],
)
def test_the_reporters_words_only_guess(log: str, category: Category) -> None:
    d = classify(log, learned=False)
    assert d.category is category
    assert d.confidence < 0.5


def test_an_engine_line_outweighs_the_reporters_words() -> None:
    log = (
        "it just hangs after loading, then crashes\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a "
        "total capacity of 22.18 GiB of which 3.47 GiB is free."
    )
    assert classify(log).category is Category.OOM_GPU


def test_a_process_killed_at_its_memory_limit_is_the_hosts() -> None:
    log = "Container is killed by Kubernetes when memory crosses the defined limit."
    d = classify(log, learned=False)
    assert d.category is Category.OOM_HOST
    assert d.confidence < 0.5
