"""Student's t quantiles: the one table every 95% interval and two-sample test here uses.

:func:`chi2_95` beside it: the one-sided 95% chi-square quantile, for telling a sample
variance significantly larger than a pooled one; :func:`chi2_quantile` any other (the
winner's run-to-run noise, :func:`bringup.plan.winner.run_noise`).

:func:`t95` is the two-sided 95% critical value ``t(0.975, df)`` for any (fractional)
degrees of freedom, so Welch's test (:mod:`bringup.plan.winner`), the benchmark's
intervals across repeats (:mod:`bringup.bench.metrics`) and the simulated engine's
intervals all read the same numbers.
"""

from __future__ import annotations

import math

# Two-sided 95% Student t quantiles by degrees of freedom, interpolated in 1/df between
# rows (accurate to ~0.01 for Welch's fractional df). Hand-written: one table does not
# justify a statistics dependency such as scipy.
_T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980,
}  # fmt: skip
Z95 = 1.960  # the normal quantile: a CI taken as normal, or df beyond the table


def t95(df: float) -> float:
    """The two-sided 95% Student t critical value for ``df`` (fractional) degrees of freedom."""
    if math.isinf(df) or df > 120:
        return Z95
    df = max(df, 1.0)
    rows = sorted(_T95)
    below = max(d for d in rows if d <= df)
    above = min((d for d in rows if d >= df), default=below)
    if above == below:
        return _T95[below]
    # linear in 1/df between the neighbouring rows
    w = (1 / below - 1 / df) / (1 / below - 1 / above)
    return _T95[below] + w * (_T95[above] - _T95[below])


def chi2_95(df: float) -> float:
    """The one-sided 95% chi-square quantile for ``df`` degrees of freedom, by the
    Wilson-Hilferty cube (within ~3% of the tabulated value from 1 df, closer above)."""
    return chi2_quantile(df, _Z90)


def chi2_quantile(df: float, z: float) -> float:
    """The chi-square quantile for ``df`` degrees of freedom at the normal quantile ``z``
    (the Wilson-Hilferty cube: ``z = -0.674`` the lower quartile, ``2.326`` the 99th
    percentile; within a few percent of the tabulated values from 1 df)."""
    df = max(df, 1.0)
    c = 2.0 / (9.0 * df)
    return df * max(0.0, 1.0 - c + z * math.sqrt(c)) ** 3


_Z90 = 1.645  # the one-sided 95% normal quantile
