"""The long-context probe: a fact placed deep in a prompt that fills a slot's context.

Short prompts miss a whole class of breakage: a config whose long prompts lose their
beginning, an attention path that goes wrong past some length, or a per-slot context far
smaller than the user believes (llama-server splits ``-c`` over ``--parallel`` slots,
llama.cpp #10070). The probe builds a prompt of generated filler sentences, plants one
generated fact (a five-digit code under a generated name) near the prompt's beginning,
fills it to the target length and ends by starting the fact's sentence again; a greedy
continuation must repeat the code. It runs idle, then ``streams`` different probes at once
(each stream prefills while the others do), and every one must retrieve its own code.

The target length is the context one request is meant to have: ``checks.context_tokens``
when the spec states it, else the per-slot context the server reports (llama-server
``/props``) or the engine's flags imply, capped by ``checks.long_context_max_tokens``
for cost. A miss or a refused request fails the trial as ``accuracy_regression`` naming
the length. Results are data; nothing here raises for a bad server.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from bringup.checks.garbage import quote
from bringup.http import OpenAIClient, RequestError
from bringup.verdict import Category

ANSWER_TOKENS = 10
MARGIN_TOKENS = 24  # chat templates and BOS tokens the count may not see
DEPTH = 0.1  # where the fact sits, as a fraction of the filler: early, so truncation loses it
MIN_TOKENS = 128  # below this the probe says nothing a known answer does not

_NAMES = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "heron", "iris")
_NOUNS = ("river", "lantern", "market", "harbor", "orchard", "bridge", "meadow", "tower")
_VERBS = ("crossed", "painted", "visited", "guarded", "measured", "described", "repaired")
_ADJS = ("quiet", "narrow", "ancient", "bright", "distant", "crowded", "hidden", "wide")
_PEOPLE = ("the farmer", "a traveler", "the mayor", "an old sailor", "the teacher", "a child")


@dataclass
class ProbeItem:
    arm: str  # "idle" or "concurrent"
    prompt_tokens: int
    expected: str
    output: str = ""
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.error is None and self.expected in self.output


@dataclass
class LongContextReport:
    passed: bool
    context_tokens: int  # the length the prompts were built for
    source: str  # where that length came from
    category: Category | None = None
    evidence: list[str] = field(default_factory=list)
    items: list[ProbeItem] = field(default_factory=list)
    elapsed_s: float = 0.0
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["category"] = self.category.value if self.category else None
        return out


def _sentence(rng: random.Random) -> str:
    return (
        f"{rng.choice(_PEOPLE).capitalize()} {rng.choice(_VERBS)} the {rng.choice(_ADJS)} "
        f"{rng.choice(_NOUNS)} near the {rng.choice(_ADJS)} {rng.choice(_NOUNS)}."
    )


def build_prompt(seed: int, sentences: int) -> tuple[str, str]:
    """``(prompt, code)``: filler with the fact at ``DEPTH``, ending on the fact's start."""
    rng = random.Random(seed)
    name = f"{rng.choice(_NAMES)} {rng.choice(_NOUNS)}"
    code = f"{rng.randrange(10_000, 100_000)}"
    lead = f"The secret code of the {name} is"
    filler = [_sentence(rng) for _ in range(sentences)]
    at = int(len(filler) * DEPTH)
    filler.insert(at, f"{lead} {code}. Remember it.")
    return " ".join(filler) + f"\n\nQuestion: what is the secret code of the {name}?\n{lead}", code


async def _count(client: OpenAIClient, text: str) -> int | None:
    try:
        doc = await client.post_json("/tokenize", {"content": text})
    except RequestError:
        return None
    tokens = doc.get("tokens") if isinstance(doc, dict) else None
    return len(tokens) if isinstance(tokens, list) else None


async def sized_prompt(client: OpenAIClient, seed: int, target: int) -> tuple[str, str, int]:
    """A probe prompt of at most ``target`` tokens (by the server's tokenizer when it has
    one, else about 1.4 tokens a word); ``(prompt, code, tokens)``."""
    probe, _ = build_prompt(seed, 20)
    per20 = await _count(client, probe)
    per_sentence = (per20 or int(len(probe.split()) * 1.4)) / 20
    n = max(1, int(target / per_sentence))
    grown = False
    best: tuple[str, str, int] = ("", "", 0)
    while True:
        prompt, code = build_prompt(seed, n)
        tokens = await _count(client, prompt)
        tokens = tokens if tokens is not None else int(len(prompt.split()) * 1.4)
        if tokens <= target or n == 1:
            if tokens < 0.95 * target and not grown:  # fill the slot, not most of it
                grown = True
                n += max(1, int((target - tokens) / per_sentence) - 1)
                best = (prompt, code, tokens)
                continue
            return prompt, code, tokens
        if grown:
            return best
        n = max(1, n - max(1, int((tokens - target) / per_sentence) + 1))


async def served_context(client: OpenAIClient) -> tuple[int | None, int | None]:
    """``(per-slot context, slots)`` as the server reports them, where it does.

    llama-server's ``/props`` gives each slot's ``n_ctx`` and ``total_slots``; vLLM's
    ``/v1/models`` gives ``max_model_len``.
    """
    props = await client.props()
    if props:
        settings = props.get("default_generation_settings") or {}
        n_ctx, slots = settings.get("n_ctx"), props.get("total_slots")
        if isinstance(n_ctx, int) and n_ctx > 0:
            return n_ctx, slots if isinstance(slots, int) and slots > 0 else None
    doc = await client.get_json("/v1/models")
    for m in (doc.get("data") if isinstance(doc, dict) else None) or []:
        if isinstance(m, dict) and isinstance(m.get("max_model_len"), int):
            return int(m["max_model_len"]), None
    return None, None


async def long_context_check(
    client: OpenAIClient,
    *,
    stated: int | None,
    cap: int,
    streams: int,
    model: str | None = None,
) -> LongContextReport:
    """Resolve the target length (stated, else the served per-slot context up to ``cap``)
    and run the probe; ``streams`` is the most streams a level of the benchmark runs."""
    slot, slots = await served_context(client)
    streams = max(1, min(streams, slots or streams, 4))
    note = ""
    if stated is not None:
        target, source = stated, "checks.context_tokens"
        if slot is not None and slot < stated:
            note = f"; the server gives each slot only {slot} tokens"
    elif slot is not None:
        target, source = min(slot, cap), f"the per-slot context the server reports ({slot})"
    else:
        return LongContextReport(
            True, 0, "", skipped="the server reports no per-slot context; set "
            "checks.context_tokens to the context one request must have",
        )  # fmt: skip
    return await run_long_context(
        client, target, source, streams=streams, model=model, slot_note=note
    )


async def _ask(client: OpenAIClient, item: ProbeItem, prompt: str, model: str | None) -> None:
    start = time.perf_counter()
    try:
        c = await client.complete(prompt, max_tokens=ANSWER_TOKENS, temperature=0.0, model=model)
        item.output = c.text
    except RequestError as exc:
        item.error = str(exc)[:300]
    item.elapsed_s = round(time.perf_counter() - start, 3)


async def run_long_context(
    client: OpenAIClient,
    target_tokens: int,
    source: str,
    *,
    streams: int = 1,
    model: str | None = None,
    slot_note: str = "",
) -> LongContextReport:
    """The probe at ``target_tokens`` (idle, then ``streams`` at once); see the module doc."""
    started = time.perf_counter()
    report = LongContextReport(True, target_tokens, source)
    budget = target_tokens - ANSWER_TOKENS - MARGIN_TOKENS
    if budget < MIN_TOKENS:
        report.skipped = f"a {target_tokens}-token context leaves no room for a long prompt"
        return report
    prompts = [await sized_prompt(client, 1000 + k, budget) for k in range(max(1, streams) + 1)]
    idle = ProbeItem("idle", prompts[0][2], prompts[0][1])
    await _ask(client, idle, prompts[0][0], model)
    report.items.append(idle)
    if streams > 1:
        rest = prompts[1:]
        batch = [ProbeItem("concurrent", tokens, code) for _, code, tokens in rest]
        await asyncio.gather(
            *(_ask(client, it, p[0], model) for it, p in zip(batch, rest, strict=True))
        )
        report.items.extend(batch)
    report.elapsed_s = round(time.perf_counter() - started, 3)
    missed = [it for it in report.items if not it.passed]
    if missed:
        report.passed = False
        report.category = Category.ACCURACY_REGRESSION
        for it in missed:
            got = f"the request failed: {it.error}" if it.error else f"got {quote(it.output)}"
            where = "idle" if it.arm == "idle" else f"with {streams} streams at once"
            report.evidence.append(
                f"long-context probe at {target_tokens} tokens ({source}), {where}: a "
                f"{it.prompt_tokens}-token prompt's fact {it.expected!r} was not retrieved; "
                f"{got}{slot_note}"
            )
    return report
