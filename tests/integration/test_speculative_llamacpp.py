"""Speculative decoding on the real llama-server: n-gram drafts, output and acceptance."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.checks.reference import ReferenceAnswers
from bringup.checks.speculative import speculative_check
from bringup.http import OpenAIClient
from bringup.testing.llama import serve_llama

pytestmark = pytest.mark.integration

# a prompt that repeats itself gives an n-gram draft something to propose
PROMPTS = [
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3,",
    "The Eiffel Tower is located in the city of",
]


async def test_ngram_speculation_answers_like_plain_greedy_and_reports_acceptance(
    llama_server: str, gemma_path: str, tmp_path: Path
) -> None:
    async with (
        serve_llama(llama_server, gemma_path, tmp_path, "--spec-type", "none") as url,
        OpenAIClient(url, timeout_s=300) as client,
    ):
        plain = [await client.complete(p, max_tokens=24) for p in PROMPTS]
    reference = ReferenceAnswers(PROMPTS, 24, plain)
    flags = {"--spec-type": "ngram-simple"}
    async with (
        serve_llama(llama_server, gemma_path, tmp_path, "--spec-type", "ngram-simple") as url,
        OpenAIClient(url, timeout_s=300) as client,
    ):
        # the candidate's answers as the accurate stage asks them: greedy, with logprobs
        # (llama-server drafts with logprobs asked too)
        own = [await client.complete(p, max_tokens=24, logprobs=5) for p in PROMPTS]
        answers = ReferenceAnswers(PROMPTS, 24, own)
        rep = await speculative_check(client, reference, answers, flags, {"--spec-type": "none"})
    print(rep.to_dict())
    assert rep.judged and rep.passed, rep.evidence
    assert rep.identical == len(PROMPTS)
    assert rep.acceptance is not None and rep.acceptance.source == "timings"
    assert rep.acceptance.drafted > 0 and rep.metrics()["spec_acceptance_rate"] > 0
