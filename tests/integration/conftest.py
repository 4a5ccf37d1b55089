"""Fixtures for tests against the real llama-server and the real Gemma 3 270M model."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bringup.builtin_models import resolve_builtin
from bringup.engines.llamacpp import find_llama_server
from bringup.errors import ModelNotFoundError
from bringup.spec import Spec, parse_spec


@pytest.fixture(scope="session")
def llama_server() -> str:
    binary = find_llama_server()
    if binary is None:
        pytest.skip("llama-server is not installed (run `make engine`)")
    return binary


@pytest.fixture(scope="session")
def gemma_path() -> str:
    try:
        return str(resolve_builtin("gemma3-270m"))
    except ModelNotFoundError:
        pytest.skip("the Gemma 3 270M model is not installed (run `make engine`)")


def spec_text(model: str, extra: str = "", requests: int = 2) -> str:
    """A small spec over the real model: two flags, tiny benchmark, no accuracy stage.

    ``requests`` per benchmark level: a large number holds a trial in its benchmark for as
    long as a test needs (a slow trial, not a race against a short one).
    """
    return f"""
[engine]
name = "llama.cpp"
[model]
path = "{model}"
[launch]
args = ["-c", "1024", "--no-warmup", "-t", "2"]
start_timeout_s = 60
hang_timeout_s = 30
stop_grace_s = 5
[space]
"--flash-attn" = ["on", "off"]
"--cache-type-v" = ["f16", "q8_0"]
[reference]
"--flash-attn" = "off"
"--cache-type-v" = "f16"
[bench]
concurrency = [1]
input_tokens = 16
output_tokens = 8
requests = {requests}
warmup = 0
[checks]
accuracy = false
{extra}
"""


def make_spec(model: str, extra: str = "", requests: int = 2) -> Spec:
    return parse_spec(spec_text(model, extra, requests), source="integration.toml")


@pytest.fixture
def spec(llama_server: str, gemma_path: str) -> Spec:
    return make_spec(gemma_path)


@pytest.fixture
def spec_factory(llama_server: str) -> Callable[..., Spec]:
    return make_spec


@pytest.fixture
def spec_text_factory(llama_server: str) -> Callable[..., str]:
    return spec_text
