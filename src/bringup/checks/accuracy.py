"""The ``accurate`` stage: differential comparison of a candidate with the reference.

``collect_answers(client, spec)`` asks the N accuracy prompts greedily with top
log-probabilities and returns :class:`ReferenceAnswers` (JSON-serialisable, so the
reference's answers are stored once per fingerprint and model and reused). Given the
reference's answers, ``collect_answers(..., reference=ref)`` also has the candidate score
the reference's tokens in the reference's contexts (teacher forcing, see
:mod:`bringup.checks.scoring`), so log-probabilities are compared on the same tokens.

``compare_accuracy(reference, candidate, spec)`` reports greedy token agreement (share of
reference tokens reproduced before the first divergence), first divergence positions, the
mean absolute log-probability difference on the reference tokens and the signed paired
difference, each with a bootstrap 95% CI over prompts, and the garbage the candidate wrote.
Every verdict is three-way by its interval (:mod:`bringup.checks.intervals`,
``AccuracyReport.verdicts``): the MAD against ``max_logprob_mad``, the agreement against
``min_token_agreement``, and the share of prompts answered with garbage against
``max_garbage_share``. A garbage finding on a prompt whose reference answer trips the same
detector is excused (the reference's own loops are not the candidate's fault) and listed.
Garbage that is not a pass fails as ``garbage_output``; drift or agreement that is not a
pass fails as ``accuracy_regression``; an inconclusive one's evidence begins
"inconclusive" and names the interval (the point estimate alone decided borderline rows
by luck). :mod:`bringup.checks.accuracy_budget` measures more before that is final.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bringup.checks.garbage import check_likelihood, detect_garbage
from bringup.checks.intervals import Verdict, at_least, at_most, garbage_share, wilson
from bringup.checks.known_answers import accuracy_prompts_for
from bringup.checks.reference import ReferenceAnswers
from bringup.checks.scoring import force_tokens, mean_finite, score_text
from bringup.http import Completion, OpenAIClient, RequestError
from bringup.spec import Config, Spec
from bringup.verdict import Category

TOP_LOGPROBS = 10
# Defaults measured on Gemma 3 270M Q4_K_M, llama-server b11434 on CPU, the 16 built-in
# prompts x 32 tokens, against f16 (tests/integration/test_accuracy_llamacpp.py):
#   f16 vs f16 (two launches)  MAD 0.0000             agreement 1.000
#   q8_0 K cache               MAD 0.0517 (0.046-0.057) agreement 0.607
#   q4_0 K+V, flash attention  MAD 0.2203 (0.196-0.245) agreement 0.137
# The MAD limit sits between q8_0 and q4_0 (about their geometric mean): an 8-bit cache
# passes, a 4-bit one (or an FP8 cache with 3 mantissa bits) does not. Greedy agreement on
# a model this small breaks on near-ties, so its limit is loose.
DEFAULT_MAX_LOGPROB_MAD = 0.10
DEFAULT_MIN_TOKEN_AGREEMENT = 0.35
# The share of accuracy prompts that may be garbage the reference did not also write:
# one broken answer in a handful is not yet proof (a detector near its threshold), three
# in sixteen is (Wilson's lower bound 0.066 > 0.05).
DEFAULT_MAX_GARBAGE_SHARE = 0.05
BOOTSTRAP_RESAMPLES = 2000


async def collect_answers(
    client: OpenAIClient, spec: Spec, *, reference: ReferenceAnswers | None = None
) -> ReferenceAnswers:
    """Greedy answers with top logprobs; with ``reference``, also force-score its tokens.

    Without ``reference`` (this is the reference) it answers ``reference_prompt_count``
    prompts: the budget a candidate may be asked when its verdict is inconclusive."""
    prompts = (
        reference.prompts if reference else accuracy_prompts_for(spec, reference_prompt_count(spec))
    )
    n = reference.max_tokens if reference else spec.checks.accuracy_tokens
    answers: list[Completion] = []
    forced: list[list[float]] | None = [] if reference else None
    for i, prompt in enumerate(prompts):
        own = await client.complete(prompt, max_tokens=n, temperature=0.0, logprobs=TOP_LOGPROBS)
        answers.append(own)
        if reference is not None and forced is not None:
            target = reference.answers[i].tokens
            forced.append(await force_tokens(client, prompt, target, first=own, top=TOP_LOGPROBS))
    return ReferenceAnswers(prompts, n, answers, forced)


def reference_prompt_count(spec: Spec) -> int:
    """How many prompts the reference answers: ``checks.accuracy_max_prompts``, else twice
    ``accuracy_prompts`` (never fewer than ``accuracy_prompts``)."""
    c = spec.checks
    budget = (
        c.accuracy_max_prompts if c.accuracy_max_prompts is not None else 2 * c.accuracy_prompts
    )
    return max(budget, c.accuracy_prompts)


@dataclass
class AccuracyReport:
    passed: bool
    category: Category | None
    token_agreement: float
    exact_match: float  # share of prompts answered token for token like the reference
    first_divergence: list[int | None]  # per prompt; None when no divergence
    logprob_mad: float
    logprob_mad_ci: tuple[float, float]
    logprob_diff: float  # mean signed (candidate - reference); negative: less sure of them
    logprob_diff_ci: tuple[float, float]
    thresholds: dict[str, float]
    evidence: list[str] = field(default_factory=list)
    per_prompt: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None
    verdict: str = "pass"  # the MAD verdict by interval: "pass", "fail" or "inconclusive"
    token_agreement_ci: tuple[float, float] = (math.nan, math.nan)
    garbage_prompts: int = 0  # prompts with garbage the reference did not also write
    garbage_share_ci: tuple[float, float] = (0.0, 0.0)
    excused: list[str] = field(default_factory=list)  # garbage the reference wrote as well
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # check -> three-way verdict
    measured: str | None = None  # what measuring more added (accuracy_budget)

    @property
    def inconclusive(self) -> bool:
        """No verdict failed and at least one straddles its limit: more prompts may decide."""
        vs = self.verdicts.values()
        return "fail" not in vs and "inconclusive" in vs

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "category": self.category.value if self.category else None,
            "token_agreement": self.token_agreement,
            "exact_match": self.exact_match,
            "first_divergence": self.first_divergence,
            "logprob_mad": self.logprob_mad,
            "logprob_mad_ci": list(self.logprob_mad_ci),
            "logprob_diff": self.logprob_diff,
            "logprob_diff_ci": list(self.logprob_diff_ci),
            "thresholds": self.thresholds,
            "evidence": self.evidence,
            "per_prompt": self.per_prompt,
            "note": self.note,
            "verdict": self.verdict,
            "token_agreement_ci": list(self.token_agreement_ci),
            "garbage_prompts": self.garbage_prompts,
            "garbage_share_ci": list(self.garbage_share_ci),
            "excused": self.excused,
            "verdicts": dict(self.verdicts),
            "measured": self.measured,
        }

    def summary(self) -> str:
        lo, hi = self.logprob_mad_ci
        return (
            f"token agreement {self.token_agreement:.3f}, logprob MAD {self.logprob_mad:.4f} "
            f"(95% CI {lo:.4f}-{hi:.4f}), paired diff {self.logprob_diff:+.4f}"
        )


def bootstrap_ci(
    values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean (seeded: reports are reproducible)."""
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return (math.nan, math.nan)
    if len(vals) == 1:
        return (vals[0], vals[0])
    rng = random.Random(seed)
    n = len(vals)
    means = sorted(sum(rng.choices(vals, k=n)) / n for _ in range(resamples))
    return (means[int(0.025 * resamples)], means[min(resamples - 1, int(0.975 * resamples))])


def _prefix(a: Sequence[str], b: Sequence[str]) -> int:
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    return k


def _candidate_lp(ref: Completion, cand: Completion, forced: list[float] | None) -> list[float]:
    """The candidate's logprob of each reference token, as far as it is known."""
    if forced is not None:
        return forced
    # Without forcing only the shared prefix is comparable, plus the divergence position
    # when the reference token is among the candidate's top alternatives there.
    k = _prefix(ref.tokens, cand.tokens)
    out = list(cand.token_logprobs[:k])
    if k < len(ref.tokens) and k < len(cand.top_logprobs):
        alt = cand.top_logprobs[k].get(ref.tokens[k])
        if alt is not None:
            out.append(alt)
    return out


def _thresholds(spec: Spec) -> dict[str, float]:
    c = spec.checks
    mad = c.max_logprob_mad if c.max_logprob_mad is not None else DEFAULT_MAX_LOGPROB_MAD
    agr = (
        c.min_token_agreement if c.min_token_agreement is not None else DEFAULT_MIN_TOKEN_AGREEMENT
    )
    garbage = c.max_garbage_share
    return {
        "max_logprob_mad": mad,
        "min_token_agreement": agr,
        "max_garbage_share": DEFAULT_MAX_GARBAGE_SHARE if garbage is None else garbage,
    }


async def compare_accuracy(
    reference: ReferenceAnswers,
    candidate: ReferenceAnswers,
    spec: Spec,
    client_for_reference_scoring: OpenAIClient | None = None,
    *,
    candidate_flags: Config | None = None,
    limits: Mapping[str, float] | None = None,
) -> AccuracyReport:
    """Greedy agreement and log-probability drift of the candidate against the reference.

    With ``client_for_reference_scoring`` (a running reference server) the candidate's own
    answers are also scored by the reference: far less likely than the reference's own
    answers is garbage. With ``candidate_flags``, drift caused only by flags listed in
    ``spec.checks.tolerate`` is reported but accepted. ``limits`` replaces the spec's
    thresholds it names (the paired comparison under load sets them from its noise floor).
    """
    limits = {**_thresholds(spec), **(limits or {})}
    per_prompt: list[dict[str, Any]] = []
    abs_means: list[float] = []
    signed_means: list[float] = []
    agreements: list[float] = []
    divergences: list[int | None] = []
    garbage: dict[int, str] = {}  # prompt index -> the first finding on it
    excused: list[str] = []
    for i, prompt in enumerate(reference.prompts):
        ref, cand = reference.answers[i], candidate.answers[i]
        forced = candidate.forced[i] if candidate.forced else None
        k = _prefix(ref.tokens, cand.tokens)
        same = k == len(ref.tokens) == len(cand.tokens)
        divergences.append(None if same else k)
        agreements.append(k / len(ref.tokens) if ref.tokens else 1.0)
        lp = _candidate_lp(ref, cand, forced)
        # Unscored positions (-inf) are left out; a reference token outside the candidate's
        # top-K was scored at the top-K floor, so its difference is a lower bound.
        diffs = [
            c - r
            for c, r in zip(lp, ref.token_logprobs, strict=False)
            if math.isfinite(c) and math.isfinite(r)
        ]
        if diffs:
            abs_means.append(sum(abs(d) for d in diffs) / len(diffs))
            signed_means.append(sum(diffs) / len(diffs))
        finding = detect_garbage(cand.text, cand.tokens or None)
        if finding:
            where = f"prompt {i + 1} {prompt[:40]!r}: {finding.evidence()}"
            own = detect_garbage(ref.text, ref.tokens or None)
            if own is not None and own.detector == finding.detector:
                excused.append(f"{where} (the reference's answer trips {own.detector} too)")
            else:
                garbage[i] = where
        per_prompt.append(
            {
                "prompt": prompt,
                "reference": ref.text,
                "candidate": cand.text,
                "first_divergence": None if same else k,
                "compared_tokens": len(diffs),
                "logprob_mad": abs_means[-1] if diffs else None,
            }
        )
    if client_for_reference_scoring is not None:
        found = await _likelihood_findings(client_for_reference_scoring, reference, candidate)
        for i, where in found:
            garbage.setdefault(i, where)

    mad = sum(abs_means) / len(abs_means) if abs_means else math.nan
    diff = sum(signed_means) / len(signed_means) if signed_means else math.nan
    agreement = sum(agreements) / len(agreements) if agreements else math.nan
    exact = sum(1 for d in divergences if d is None) / max(1, len(divergences))
    report = AccuracyReport(
        passed=True,
        category=None,
        token_agreement=agreement,
        exact_match=exact,
        first_divergence=divergences,
        logprob_mad=mad,
        logprob_mad_ci=bootstrap_ci(abs_means),
        logprob_diff=diff,
        logprob_diff_ci=bootstrap_ci(signed_means),
        thresholds=limits,
        per_prompt=per_prompt,
    )
    n = len(reference.prompts)
    report.token_agreement_ci = bootstrap_ci(agreements)
    report.garbage_prompts, report.excused = len(garbage), excused
    report.garbage_share_ci = wilson(len(garbage), n) if n else (0.0, 0.0)
    mad_v = at_most(report.logprob_mad_ci, limits["max_logprob_mad"])
    report.verdict = mad_v
    report.verdicts = {
        "garbage": garbage_share(len(garbage), n, limits["max_garbage_share"]),
        "logprob_mad": mad_v,
        "token_agreement": at_least(report.token_agreement_ci, limits["min_token_agreement"]),
    }
    if report.verdicts["garbage"] != "pass":
        findings = [garbage[i] for i in sorted(garbage)]
        if report.verdicts["garbage"] == "inconclusive":
            glo, ghi = report.garbage_share_ci
            findings.insert(
                0,
                f"inconclusive: garbage on {len(garbage)} of {n} prompts, its share's 95% CI "
                f"{glo:.3f}-{ghi:.3f} straddles the limit {limits['max_garbage_share']}",
            )
        report.passed, report.category, report.evidence = (
            False,
            Category.GARBAGE_OUTPUT,
            findings,
        )
        return report
    crossed = []
    unsure = []
    lo, hi = report.logprob_mad_ci
    if report.verdict == "fail":
        crossed.append(f"logprob MAD {mad:.4f} > {limits['max_logprob_mad']} (wholly, by its CI)")
    elif report.verdict == "inconclusive":
        unsure.append(
            f"inconclusive: logprob MAD {mad:.4f}, its 95% CI {lo:.4f}-{hi:.4f} straddles "
            f"the limit {limits['max_logprob_mad']}"
        )
    alo, ahi = report.token_agreement_ci
    if report.verdicts["token_agreement"] == "fail":
        crossed.append(
            f"token agreement {agreement:.3f} < {limits['min_token_agreement']} "
            f"(wholly, by its CI {alo:.3f}-{ahi:.3f})"
        )
    elif report.verdicts["token_agreement"] == "inconclusive":
        unsure.append(
            f"inconclusive: token agreement {agreement:.3f}, its 95% CI {alo:.3f}-{ahi:.3f} "
            f"straddles the limit {limits['min_token_agreement']}"
        )
    if unsure:
        unsure[-1] += "; more accuracy prompts (checks.accuracy_max_prompts) would decide it"
    crossed += unsure
    if crossed:
        worst = max(range(len(per_prompt)), key=lambda j: per_prompt[j]["logprob_mad"] or 0.0)
        w = per_prompt[worst]
        evidence = [
            f"{'; '.join(crossed)} ({report.summary()})",
            f"worst prompt {w['prompt'][:40]!r}: reference {w['reference'][:60]!r}, "
            f"candidate {w['candidate'][:60]!r}",
        ]
        tolerated = _tolerated(spec, candidate_flags)
        if tolerated:
            report.note = f"drift accepted: differs from the reference only in {tolerated}"
            report.evidence = evidence
            return report
        report.passed, report.category, report.evidence = (
            False,
            Category.ACCURACY_REGRESSION,
            evidence,
        )
    return report


def _tolerated(spec: Spec, flags: Config | None) -> list[str]:
    """The differing flags when every one is tolerated; empty otherwise."""
    if flags is None or not spec.checks.tolerate:
        return []
    ref = spec.reference_config()
    differing = sorted(f for f, v in flags.items() if ref.get(f) != v)
    if differing and all(f in spec.checks.tolerate for f in differing):
        return differing
    return []


async def _likelihood_findings(
    ref_client: OpenAIClient, reference: ReferenceAnswers, candidate: ReferenceAnswers
) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for i, prompt in enumerate(reference.prompts):
        ref, cand = reference.answers[i], candidate.answers[i]
        if _prefix(ref.tokens, cand.tokens) == len(cand.tokens):
            continue  # the candidate said what the reference says: nothing to score
        try:
            scored = await score_text(ref_client, prompt, cand.text, top=TOP_LOGPROBS)
        except RequestError:
            continue  # the reference could not score it: no evidence either way
        finding = check_likelihood(cand.text, mean_finite(scored), mean_finite(ref.token_logprobs))
        if finding:
            out.append((i, f"prompt {i + 1} {prompt[:40]!r}: {finding.evidence()}"))
    return out
