"""Three-way verdicts by interval: ``pass``, ``fail`` or ``inconclusive``.

A check that estimates a quantity from a handful of prompts (log-probability drift, greedy
token agreement, the share of answers that are garbage) decides by the quantity's 95%
interval, never by the point alone: ``pass`` when the whole interval is on the good side
of the limit, ``fail`` when the whole interval is past it, ``inconclusive`` when it
straddles the limit. An inconclusive check has not shown the candidate is fine: the caller
measures more (:mod:`bringup.checks.accuracy_budget`) and, once its budget is spent, fails
it with the interval in the evidence.

Garbage is counted, not averaged: ``k`` of ``n`` prompts answered with garbage the
reference did not also produce. Its interval is Wilson's score interval for a binomial
share (hand-written: three lines do not justify a statistics dependency). No garbage at
all passes whatever ``n`` is: the detectors are the evidence, and none fired.
"""

from __future__ import annotations

import math
from typing import Literal

Verdict = Literal["pass", "fail", "inconclusive"]
_Z95 = 1.96


def at_most(ci: tuple[float, float], limit: float) -> Verdict:
    """A quantity that must not exceed ``limit`` (drift); ``pass`` when nothing was measured."""
    lo, hi = ci
    if math.isnan(lo) or math.isnan(hi) or hi <= limit:
        return "pass"
    return "fail" if lo > limit else "inconclusive"


def at_least(ci: tuple[float, float], limit: float) -> Verdict:
    """A quantity that must reach ``limit`` (agreement); ``pass`` when nothing was measured."""
    lo, hi = ci
    if math.isnan(lo) or math.isnan(hi) or lo >= limit:
        return "pass"
    return "fail" if hi < limit else "inconclusive"


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% score interval for ``k`` successes in ``n`` trials."""
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    z2 = _Z95 * _Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def garbage_share(k: int, n: int, limit: float) -> Verdict:
    """``k`` of ``n`` prompts garbage: pass at none, fail when the share's interval is wholly
    over ``limit``, else inconclusive."""
    if k == 0:
        return "pass"
    return at_most(wilson(k, n), limit)


def worst(*verdicts: Verdict) -> Verdict:
    """``fail`` over ``inconclusive`` over ``pass``."""
    if "fail" in verdicts:
        return "fail"
    return "inconclusive" if "inconclusive" in verdicts else "pass"
