"""The second stage of the learned fallback: which of the rules and the word model to believe.

A fixed threshold ("the model decides below rule confidence 0.45") trusts the rules' answer
and the model's as two separate things. The stage here reads both at once, as the inputs of
one multinomial logistic regression: the word model's probabilities (and their logarithms),
the rules' label (one-hot, ``unknown`` included) and that label scaled by the rules'
confidence, the confidence itself, how many words of the log the model knows and whether
the rules found a failure signal at all. It learns, for instance, that a rule answering
``invalid_config`` at 0.4 is often a crash the words tell better, and that one answering
``port_in_use`` at 0.4 is usually right. ``bench/diagnose_train.py`` fits it on the cases the
rules answered before any rule writer had read them (``rules_unseen.jsonl``), with the word
model's out-of-fold probabilities, and exports it beside the word model.

:func:`stack_inputs` is the one place these inputs are made: the trainer builds its matrix
with it and the runtime calls it on the log it classifies, so the two cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bringup.diagnose.diagnosis import UNKNOWN

STACK_VERSION = 1
_FLOOR = 1e-6  # log(p) of a category the model gives no weight


def rule_labels(classes: Sequence[str]) -> tuple[str, ...]:
    """The rules' possible answers, in input order: the model's categories, then unknown."""
    return (*classes, UNKNOWN)


def stack_inputs(
    probs: Sequence[float],
    classes: Sequence[str],
    rule_label: str,
    rule_conf: float,
    known_words: int,
) -> list[float]:
    """The stage's inputs for one log. ``probs`` are the word model's uncalibrated
    probabilities in the order of ``classes``; a rule label outside them sets no one-hot."""
    labels = rule_labels(classes)
    onehot = [1.0 if label == rule_label else 0.0 for label in labels]
    return [
        *probs,
        *(math.log(p + _FLOOR) for p in probs),
        *onehot,
        *(v * rule_conf for v in onehot),
        rule_conf,
        math.log1p(known_words),
        1.0 if rule_label == UNKNOWN else 0.0,
    ]


@dataclass(frozen=True)
class Stack:
    classes: tuple[str, ...]  # the categories it answers
    coef: tuple[tuple[float, ...], ...]  # one row per class, one weight per input
    intercept: tuple[float, ...]

    @classmethod
    def from_json(cls, doc: dict[str, Any], n_inputs: int) -> Stack:
        if doc.get("version") != STACK_VERSION:
            raise ValueError(f"learned stack v{doc.get('version')!r}, expected {STACK_VERSION}")
        classes = tuple(doc["classes"])
        coef = tuple(tuple(float(v) for v in row) for row in doc["coef"])
        if len(coef) != len(classes) or any(len(row) != n_inputs for row in coef):
            raise ValueError("learned stack: coef is not classes x inputs")
        if len(doc["intercept"]) != len(classes):
            raise ValueError("learned stack: intercept has the wrong length")
        return cls(classes, coef, tuple(float(v) for v in doc["intercept"]))

    def probabilities(self, inputs: Sequence[float]) -> dict[str, float]:
        logits = [
            b + sum(w * x for w, x in zip(row, inputs, strict=True))
            for row, b in zip(self.coef, self.intercept, strict=True)
        ]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return {k: e / total for k, e in zip(self.classes, exps, strict=True)}


def n_inputs(classes: Sequence[str]) -> int:
    """How many inputs :func:`stack_inputs` makes for a model of these categories."""
    return len(stack_inputs([0.0] * len(classes), classes, UNKNOWN, 0.0, 0))
