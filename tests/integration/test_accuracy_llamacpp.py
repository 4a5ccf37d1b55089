"""The accuracy gate on the real llama-server: the noise floor and a q4_0 KV cache.

f16 against f16 (two separate launches) must never be flagged; a q4_0 K/V cache (with
flash attention, which a quantized V cache needs) must move log-probabilities measurably
against f16. The figures are printed (run with ``-s``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.checks import ReferenceAnswers, collect_answers, compare_accuracy
from bringup.checks.accuracy import DEFAULT_MAX_LOGPROB_MAD, DEFAULT_MIN_TOKEN_AGREEMENT
from bringup.http import OpenAIClient
from bringup.spec import Spec, parse_spec
from bringup.testing.llama import serve_llama
from bringup.verdict import Category

pytestmark = pytest.mark.integration


def spec_for(model: str) -> Spec:
    # 8 prompts x 24 tokens (and no spare ones for measuring more) keeps four launches
    # within minutes on two shared cores.
    return parse_spec(
        f'[engine]\nname = "llama.cpp"\n[model]\npath = "{model}"\n'
        "[checks]\naccuracy_prompts = 8\naccuracy_tokens = 24\naccuracy_max_prompts = 8\n"
    )


async def answers(
    binary: str, model: str, tmp: Path, flags: list[str], ref: ReferenceAnswers | None
) -> ReferenceAnswers:
    async with (
        serve_llama(binary, model, tmp, *flags) as url,
        OpenAIClient(url, timeout_s=120) as c,
    ):
        return await collect_answers(c, spec_for(model), reference=ref)


@pytest.fixture(scope="module")
def tmp_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("accuracy-logs")


@pytest.mark.slow
@pytest.mark.timeout(1500)
async def test_noise_floor_and_q4_kv_drift(
    llama_server: str, gemma_path: str, tmp_logs: Path
) -> None:
    spec = spec_for(gemma_path)
    ref = await answers(llama_server, gemma_path, tmp_logs, ["--cache-type-k", "f16"], None)
    ref = ReferenceAnswers.from_dict(ref.to_dict())  # as if reused from the store
    same = await answers(llama_server, gemma_path, tmp_logs, ["--cache-type-k", "f16"], ref)
    floor = await compare_accuracy(ref, same, spec)
    print(f"\nf16 vs f16 : {floor.summary()}; passed={floor.passed}")
    assert floor.passed and floor.category is None

    q8 = await answers(llama_server, gemma_path, tmp_logs, ["--cache-type-k", "q8_0"], ref)
    r8 = await compare_accuracy(ref, q8, spec)
    print(f"q8_0 K     : {r8.summary()}; passed={r8.passed}; divergences {r8.first_divergence}")

    q4_flags = ["--cache-type-k", "q4_0", "--cache-type-v", "q4_0", "--flash-attn", "on"]
    q4 = await answers(llama_server, gemma_path, tmp_logs, q4_flags, ref)
    r4 = await compare_accuracy(ref, q4, spec)
    crossed = r4.category is Category.ACCURACY_REGRESSION
    print(
        f"q4_0 K+V   : {r4.summary()}; divergences {r4.first_divergence}\n"
        f"default thresholds MAD {DEFAULT_MAX_LOGPROB_MAD}, agreement "
        f"{DEFAULT_MIN_TOKEN_AGREEMENT}: q4_0 {'CROSSES' if crossed else 'does not cross'} them"
    )
    # Measurable: the q4 drift's CI lies wholly above the f16 noise floor.
    assert r4.logprob_mad_ci[0] > floor.logprob_mad_ci[1]
    assert r4.logprob_mad > r8.logprob_mad
