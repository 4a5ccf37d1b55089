"""The long-context probe on the real llama-server: per-slot context, idle and concurrent."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.checks.long_context import long_context_check
from bringup.http import OpenAIClient
from bringup.testing.llama import serve_llama
from bringup.verdict import Category

pytestmark = pytest.mark.integration


async def test_slots_of_a_split_context_pass_and_a_prompt_sized_for_all_of_it_fails(
    llama_server: str, gemma_path: str, tmp_path: Path
) -> None:
    # -c 2048 with --parallel 4: each slot really has 512 tokens (llama.cpp #10070)
    async with (
        serve_llama(llama_server, gemma_path, tmp_path, "--parallel", "4") as url,
        OpenAIClient(url, timeout_s=300) as client,
    ):
        fits = await long_context_check(client, stated=None, cap=4096, streams=4)
        stated = await long_context_check(client, stated=2048, cap=4096, streams=4)
    print(fits.to_dict())
    assert fits.passed, fits.evidence
    assert fits.context_tokens == 512 and len(fits.items) == 5  # idle + 4 at once
    assert all(it.prompt_tokens > 400 for it in fits.items)
    assert not stated.passed and stated.category is Category.ACCURACY_REGRESSION
    assert "at 2048 tokens" in stated.evidence[0]
    assert "each slot only 512 tokens" in stated.evidence[0]
    assert "exceeds the available context size" in stated.evidence[0]
