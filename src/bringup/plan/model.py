"""A small performance model: the objective as a product of per-flag-value effects.

Serving throughput moves by roughly constant factors per backend choice (a faster MoE
kernel helps whatever the KV dtype), so ``log(objective)`` is fitted as a sum of main
effects by backfitting. Values never seen in a passing configuration get an optimistic
effect (the best of their flag) so the planner still tries them. The spread of the
residuals estimates how far the truth may sit from a prediction (noise plus interactions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bringup.plan.space import flags_key


def _vkey(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass
class EffectModel:
    """``log y = mu + sum_f beta[f][value]``, fitted to observed configurations."""

    flags: list[str]
    observations: list[tuple[dict[str, Any], float]] = field(default_factory=list)
    mu: float = 0.0
    beta: dict[str, dict[str, float]] = field(default_factory=dict)
    residual_sd: float = 0.0

    def observe(self, config: Mapping[str, Any], log_score: float) -> None:
        self.observations.append((dict(config), log_score))

    def fit(self, max_sweeps: int = 60) -> None:
        obs = [([_vkey(c.get(f)) for f in self.flags], y) for c, y in self.observations]
        self.beta = {f: {} for f in self.flags}
        if not obs:
            self.mu, self.residual_sd = 0.0, 0.0
            return
        self.mu = sum(y for _, y in obs) / len(obs)
        part = [[0.0] * len(self.flags) for _ in obs]  # each flag's share of each prediction
        for _ in range(max_sweeps):
            change = 0.0
            for j, f in enumerate(self.flags):
                sums: dict[str, list[float]] = {}
                for (keys, y), p in zip(obs, part, strict=True):
                    rest = self.mu + sum(p) - p[j]
                    sums.setdefault(keys[j], []).append(y - rest)
                effects = {v: sum(r) / len(r) for v, r in sums.items()}
                # Centre each flag's effects so mu carries the overall level.
                centre = sum(effects.values()) / len(effects)
                self.beta[f] = {v: e - centre for v, e in effects.items()}
                for (keys, _), p in zip(obs, part, strict=True):
                    new = self.beta[f][keys[j]]
                    change = max(change, abs(new - p[j]))
                    p[j] = new
            mu = sum(y - sum(p) for (_, y), p in zip(obs, part, strict=True)) / len(obs)
            change = max(change, abs(mu - self.mu))
            self.mu = mu
            if change < 1e-7:
                break
        resid = [y - self.mu - sum(p) for (_, y), p in zip(obs, part, strict=True)]
        dof = max(1, len(obs) - 1 - sum(max(0, len(b) - 1) for b in self.beta.values()))
        self.residual_sd = math.sqrt(sum(r * r for r in resid) / dof) if len(obs) > 1 else 0.0

    def known(self, flag: str, value: Any) -> bool:
        return _vkey(value) in self.beta.get(flag, {})

    def predict(self, config: Mapping[str, Any]) -> float:
        """Predicted log objective; unseen values take their flag's best known effect."""
        total = self.mu
        for f in self.flags:
            effects = self.beta.get(f, {})
            v = _vkey(config.get(f))
            if v in effects:
                total += effects[v]
            elif effects:
                total += max(effects.values())
        return total

    def unknown_count(self, config: Mapping[str, Any]) -> int:
        return sum(1 for f in self.flags if not self.known(f, config.get(f)))

    def seen(self) -> set[tuple[tuple[str, str], ...]]:
        return {flags_key(c) for c, _ in self.observations}
