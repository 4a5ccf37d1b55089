"""Speculative decoding: the output must be the plain greedy output; acceptance is measured.

Speculative decoding with greedy verification is lossless: a draft (a small model, n-grams,
MTP heads) proposes tokens, the target model keeps those it would have produced itself.
So a configuration that turns it on must answer the accuracy prompts *token for token*
like the reference does without it; a difference is a broken verification path, whatever
the MAD check would tolerate. The answers compared are those the accurate stage has just
asked (greedy, at idle): nothing is asked twice. That verdict is drawn only where the
candidate differs from the reference in speculative flags alone (other flags may move
answers legitimately; their drift is the accurate stage's business).

A collapse of acceptance leaves the text right and only makes serving slow (llama.cpp
#26750: MTP acceptance 40.7% instead of about 92%), so the acceptance rate is measured
where the engine exposes it and stored as the trial's figure ``spec_acceptance_rate``
(drafted tokens accepted, 0-1) and ``spec_accept_len`` (tokens per verification step,
where known): ``bringup recheck`` compares them with the stored run like any figure.
Sources, in order:

- llama-server: each completion's ``timings.draft_n`` / ``timings.draft_n_accepted``;
- vLLM: ``/metrics`` counters ``vllm:spec_decode_num_{drafts,draft_tokens,accepted_tokens}``,
  as the difference across the accurate stage's requests (the caller reads ``/metrics``
  with :func:`metrics_text` before them);
- SGLang: the ``/metrics`` gauge ``sglang:spec_accept_length``.

Acceptance is counted over the benchmark's requests too where ``/metrics`` counts it (vLLM,
SGLang: ``bench_spec_acceptance_rate``).
Drafts that copy from the context (n-gram, prompt lookup) thrive on predictable text, and a
benchmark's synthetic prompts are far more predictable than real traffic: on the H200, vLLM's
``ngram_gpu`` accepted 1.5% of its drafts on the accuracy prompts and 70-87% per position on
the benchmark's, which made it the sweep's winner. Where the benchmark's acceptance is far
above the natural prompts', :func:`speculative_warnings` says the speed gain overstates real
traffic's; the figures are kept, the verdict is not changed (the text is right).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bringup.checks.garbage import quote
from bringup.checks.reference import ReferenceAnswers
from bringup.http import OpenAIClient
from bringup.plan.space import changed_flags
from bringup.spec import Config
from bringup.verdict import Category

_SPEC_PREFIXES = ("--spec", "--speculative", "--num-speculative")
_SPEC_NAMES = ("-md", "--model-draft", "-hfd", "--hf-repo-draft")
_OFF = ("", "none", "off", "false", "0")

VLLM_DRAFTS = "vllm:spec_decode_num_drafts"
VLLM_DRAFTED = "vllm:spec_decode_num_draft_tokens"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
SGLANG_ACCEPT_LEN = "sglang:spec_accept_length"


def speculative_flags(flags: Config) -> dict[str, Any]:
    """The flags of ``flags`` that turn speculative decoding on (empty: it is off)."""
    out: dict[str, Any] = {}
    for name, value in flags.items():
        if not (name.startswith(_SPEC_PREFIXES) or name in _SPEC_NAMES):
            continue
        if value is False or value is None or str(value).strip().lower() in _OFF:
            continue
        out[name] = value
    return out


@dataclass
class Acceptance:
    source: str  # "timings", "metrics" or "gauge"
    drafted: int = 0
    accepted: int = 0
    drafts: int | None = None  # verification steps, where the engine counts them
    accept_len: float | None = None  # tokens per step (reported, or 1 + accepted / drafts)

    @property
    def rate(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "drafts": self.drafts,
            "rate": self.rate,
            "accept_len": self.accept_len,
        }


def from_timings(timings: Sequence[Mapping[str, Any]]) -> Acceptance | None:
    """llama-server's per-completion draft counts (each answer's ``timings``), summed
    (None when none were reported)."""
    drafted = accepted = 0
    seen = False
    for t in timings:
        if not isinstance(t.get("draft_n"), int):
            continue
        seen = True
        drafted += int(t["draft_n"])
        accepted += int(t.get("draft_n_accepted") or 0)
    return Acceptance("timings", drafted, accepted) if seen else None


def _samples(text: str) -> dict[str, float]:
    """Prometheus samples summed over labels, by sample name (``_total`` suffix kept)."""
    out: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[s.name] = out.get(s.name, 0.0) + float(s.value)
    except ValueError:  # not Prometheus text (an HTML error page, say): nothing exposed
        return {}
    return out


def from_metrics(before: str, after: str) -> Acceptance | None:
    """Acceptance over the check's requests from two ``/metrics`` snapshots."""
    a, b = _samples(before), _samples(after)

    def delta(name: str) -> float | None:
        key = name + "_total"
        return b[key] - a.get(key, 0.0) if key in b else None

    drafted, accepted = delta(VLLM_DRAFTED), delta(VLLM_ACCEPTED)
    if drafted is not None and accepted is not None:
        drafts = delta(VLLM_DRAFTS)
        acc = Acceptance("metrics", int(drafted), int(accepted))
        if drafts:
            acc.drafts = int(drafts)
            acc.accept_len = 1.0 + accepted / drafts
        return acc
    if SGLANG_ACCEPT_LEN in b:
        return Acceptance("gauge", accept_len=b[SGLANG_ACCEPT_LEN])
    return None


# the benchmark's acceptance counts as unrepresentative when it exceeds the natural prompts'
# by both of these (a rate, 0-1; and a factor): small or proportionate gaps are left alone
UNREPRESENTATIVE_GAP = 0.25
UNREPRESENTATIVE_FACTOR = 2.0


@dataclass
class SpeculativeReport:
    flags: dict[str, Any]
    passed: bool = True
    judged: bool = False  # identity is judged only against a reference without them alone
    identical: int = 0
    prompts: int = 0
    acceptance: Acceptance | None = None
    category: Category | None = None
    evidence: list[str] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        acc, out = self.acceptance, {}
        if acc is not None and acc.rate is not None:
            out["spec_acceptance_rate"] = round(acc.rate, 4)
        if acc is not None and acc.accept_len is not None:
            out["spec_accept_len"] = round(acc.accept_len, 3)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "flags": self.flags,
            "passed": self.passed,
            "judged": self.judged,
            "identical": self.identical,
            "prompts": self.prompts,
            "acceptance": self.acceptance.to_dict() if self.acceptance else None,
            "category": self.category.value if self.category else None,
            "evidence": self.evidence,
            "figures": self.metrics(),
        }


async def metrics_text(client: OpenAIClient) -> str:
    """The engine's ``/metrics`` text (empty where it has none)."""
    answer = await client.answer("GET", "/metrics")
    return answer.body.decode("utf-8", "replace") if answer.status == 200 else ""


async def speculative_check(
    client: OpenAIClient,
    reference: ReferenceAnswers,
    answers: ReferenceAnswers,
    flags: Config,
    reference_flags: Config,
    metrics_before: str = "",
) -> SpeculativeReport:
    """The candidate's greedy ``answers`` (the accurate stage's, to the reference's first
    prompts) against the reference's, text for text; acceptance over those requests."""
    on = speculative_flags(flags)
    rep = SpeculativeReport(on, prompts=len(answers.prompts))
    rep.judged = not speculative_flags(reference_flags) and not (
        changed_flags(flags, reference_flags) - set(on)
    )
    differ: list[str] = []
    for prompt, ref, own in zip(answers.prompts, reference.answers, answers.answers, strict=False):
        if own.text == ref.text:
            rep.identical += 1
        elif len(differ) < 3:
            differ.append(
                f"prompt {quote(prompt, 50)}: with {_label(on)} {quote(own.text)}, "
                f"the reference's greedy answer {quote(ref.text)}"
            )
    timings = [a.timings for a in answers.answers]
    rep.acceptance = from_timings(timings) or from_metrics(
        metrics_before, await metrics_text(client)
    )
    seen = f"{rep.identical}/{rep.prompts} answers identical to non-speculative greedy"
    measured = _measured(rep.acceptance)
    if rep.judged and rep.identical < rep.prompts:
        rep.passed = False
        rep.category = Category.ACCURACY_REGRESSION
        rep.evidence = [
            f"speculative decoding changed greedy output: {seen}; {measured}",
            *differ,
        ]
    else:
        why = "" if rep.judged else " (not judged: other flags differ from the reference too)"
        rep.evidence = [f"{seen}; {measured}{why}"]
    return rep


def bench_acceptance(report: dict[str, Any], before: str, after: str) -> None:
    """Record in the stored speculative ``report`` (its ``to_dict()``) the acceptance over
    the benchmark's requests, from ``/metrics`` before and after it, and whether it is far
    above the accuracy prompts' (``unrepresentative``: the warning's text)."""
    bench = from_metrics(before, after)
    if bench is None:
        return
    report["bench_acceptance"] = bench.to_dict()
    figures = report.setdefault("figures", {})
    if bench.rate is not None:
        figures["bench_spec_acceptance_rate"] = round(bench.rate, 4)
    if bench.accept_len is not None:
        figures["bench_spec_accept_len"] = round(bench.accept_len, 3)
    natural = report.get("acceptance") or {}
    pair = _comparable(natural, bench.to_dict())
    if pair is None:
        return
    what, own, load = pair
    if load - own >= (UNREPRESENTATIVE_GAP if what == "acceptance" else 1.0) and (
        load >= UNREPRESENTATIVE_FACTOR * own
    ):
        report["unrepresentative"] = (
            f"speculative {what} {load:.2f} in the benchmark against {own:.2f} on the accuracy "
            "prompts: the benchmark's synthetic prompts are far more predictable than natural "
            "text, so its speed gain overstates what real traffic will see"
        )


def _comparable(
    natural: Mapping[str, Any], bench: Mapping[str, Any]
) -> tuple[str, float, float] | None:
    """(what, natural, benchmark): acceptance rates where both have one, else accept lengths."""
    for key, what in (("rate", "acceptance"), ("accept_len", "accept length")):
        a, b = natural.get(key), bench.get(key)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return what, float(a), float(b)
    return None


def speculative_warnings(trials: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """One line per trial (name, its checks) whose benchmark flattered its speculative drafts."""
    out = []
    for name, checks in trials:
        why = (checks.get("speculative") or {}).get("unrepresentative")
        if why:
            out.append(f"{name}: {why}")
    return out


def _measured(acc: Acceptance | None) -> str:
    if acc is not None and acc.rate is not None:
        return f"acceptance {acc.rate:.3f} ({acc.accepted}/{acc.drafted} drafted, {acc.source})"
    if acc is not None and acc.accept_len is not None:
        return f"accept length {acc.accept_len:.2f} ({acc.source})"
    return "acceptance not exposed by the engine"


def _label(flags: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in flags.items())
