"""Measure more before concluding: an inconclusive accuracy verdict asks more prompts.

The reference answers :func:`~bringup.checks.accuracy.reference_prompt_count` prompts
(``checks.accuracy_max_prompts``, else twice ``accuracy_prompts``): more than a candidate
is first asked. :func:`judge_accuracy` has the candidate answer the first
``accuracy_prompts``; while its verdict is inconclusive
(:attr:`~bringup.checks.accuracy.AccuracyReport.inconclusive`: nothing failed, something
straddles its limit) and the reference answered more, it answers as many again (the new
prompts only, up to what the reference answered) and the comparison is made once more on
every prompt it answered. The report's ``measured`` says how many prompts were added and
how it ended; an inconclusive verdict once the reference's prompts are spent stays a
failure, with its interval and the budget in the evidence.

The candidate's server is still up here, so measuring more costs requests, not a launch;
a reference stored before the budget existed answered fewer prompts, and then there is
nothing more to ask.

Garbage is the exception: once some is found, more clean prompts could only clear it if
the garbage share's interval over the whole budget could fall under its limit; where it
cannot (one garbage answer in a budget of a dozen cannot), the verdict is final and
nothing more is asked, the evidence saying why.
"""

from __future__ import annotations

from bringup.checks.accuracy import (
    AccuracyReport,
    collect_answers,
    compare_accuracy,
)
from bringup.checks.intervals import garbage_share, wilson
from bringup.checks.reference import ReferenceAnswers
from bringup.http import OpenAIClient
from bringup.spec import Config, Spec


async def judge_accuracy(
    client: OpenAIClient,
    reference: ReferenceAnswers,
    spec: Spec,
    *,
    candidate_flags: Config | None = None,
) -> tuple[AccuracyReport, ReferenceAnswers]:
    """The candidate's accuracy report, measured more while inconclusive; and its answers."""
    budget = len(reference.prompts)
    first = min(spec.checks.accuracy_prompts, budget)
    n = first
    answers = await collect_answers(client, spec, reference=reference.part(0, n))
    report = await compare_accuracy(
        reference.part(0, n), answers, spec, candidate_flags=candidate_flags
    )
    settled = _garbage_settled(report, budget)
    while not report.passed and report.inconclusive and n < budget and settled is None:
        more = min(budget, 2 * n)
        extra = await collect_answers(client, spec, reference=reference.part(n, more))
        answers = answers.joined(extra)
        n = more
        report = await compare_accuracy(
            reference.part(0, n), answers, spec, candidate_flags=candidate_flags
        )
        settled = _garbage_settled(report, budget)
    if settled is not None:
        added = (
            f"measured more: {n - first} prompt(s) added to the first {first}; "
            if n > first
            else ""
        )
        report.measured = added + settled
        report.evidence.append(report.measured)
    elif n > first:
        ended = (
            "still inconclusive: the reference's prompts are spent"
            if report.inconclusive and not report.passed
            else "decided"
        )
        report.measured = (
            f"measured more: {n - first} prompt(s) added to the first {first} "
            f"(budget {budget}, checks.accuracy_max_prompts); {ended}"
        )
        if report.evidence:
            report.evidence.append(report.measured)
    elif not report.passed and report.inconclusive:
        report.measured = (
            f"no more prompts to ask: the reference answered {budget} "
            "(raise checks.accuracy_max_prompts, or run with --rerun to answer more)"
        )
        report.evidence.append(report.measured)
    return report, answers


def _garbage_settled(report: AccuracyReport, budget: int) -> str | None:
    """Why more prompts cannot clear the garbage found (None when they could): even if
    every prompt up to ``budget`` came back clean, the garbage share's interval would not
    lie wholly under its limit."""
    k, n = report.garbage_prompts, len(report.per_prompt)
    if k == 0 or n >= budget or report.passed or not report.inconclusive:
        return None  # nothing to clear, nothing left to ask, or decided already
    limit = report.thresholds["max_garbage_share"]
    if garbage_share(k, budget, limit) == "pass":
        return None
    lo, hi = wilson(k, budget)
    return (
        f"not measured more: garbage on {k} of {n} prompts fails whatever the other "
        f"{budget - n} prompt(s) of the budget answer (with all {budget} answered and no more "
        f"garbage, its share's 95% CI would be {lo:.3f}-{hi:.3f}, not wholly under the "
        f"limit {limit})"
    )
