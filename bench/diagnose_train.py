"""Train, select and export the learned fallback of the diagnosis classifier.

    python bench/diagnose_train.py [--repeats N] [--quick] [--no-export]

Needs scikit-learn (``pip install -e '.[train]'``); the runtime does not
(:mod:`bringup.diagnose.learned` applies the exported JSON in pure Python).

Data: ONLY ``fit.jsonl``, ``fit2.jsonl`` and the retired held-out sets (``heldout`` to
``heldout11``), all of which rule writers may read. The sealed sets (``heldout12``,
``heldout13``) are never opened here: :data:`ALLOWED` is the whole list of files this script reads.

Every choice is made by cross-validation grouped by repository (``owner/repo`` of the
source: no repository sits in both a fold's training and test part), repeated over
shuffles:

1. the model: feature settings and regularisation ``C`` (the terms of largest weight are
   kept and the model refitted on those alone, so the export is exactly the fitted model),
   by out-of-fold accuracy over all allowed cases;
2. the combination, on heldout2 to heldout11 and fit2 as the rules answered them *before* any
   rule writer had read them (``rules_unseen.jsonl``, from ``bench/diagnose_rules_unseen.py``):
   today's rules were written from every allowed case, so tuned against them a fallback
   would trust the rules far more than unseen logs warrant. Chosen there: the temperature
   that calibrates the model (least log-loss where the rules are below 0.5), the rule
   confidence below which the model may decide, and the least probability it needs (and,
   where the rules found no signal at all, at least 0.5).

Figures are out-of-fold: each case is predicted by a model that never saw its repository;
the combination's figure is nested (chosen on the other folds' repositories). All are fit
figures: rule writers read every case. The last line is ``cv_combined=<float>
cv_rules=<float> n=<int>`` (nested, on the cases the rules had not read, mean over
shuffles).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from bringup.diagnose import classify
from bringup.diagnose.diagnosis import UNKNOWN
from bringup.diagnose.learned import (
    CEILING,
    MIN_WORDS,
    MODEL_PATH,
    SCHEMA_VERSION,
    declines,
)
from bringup.diagnose.learned_features import FEATURES_VERSION, FeatureSettings, features
from bringup.diagnose.learned_stack import STACK_VERSION, rule_labels, stack_inputs

sys.path.insert(0, str(Path(__file__).resolve().parent))  # beside corpus_check, however loaded
from corpus_check import RETIRED

DATA = Path(__file__).resolve().parent / "data" / "diagnose"
# the only files this script opens
ALLOWED = ("fit", "fit2", *RETIRED)
# the sets the rules answered unseen (rules_unseen.jsonl), as the figures name them
UNSEEN = f"heldout2-{RETIRED[-1].removeprefix('heldout')} and fit2"
BANDS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.85), (0.85, 1.01))
TAIL = 0.5  # the rules' guessing band, where figures are also given separately

FEATURE_GRID = {
    "words+pairs": FeatureSettings(bigrams=True),
    "words+pairs+chars": FeatureSettings(bigrams=True, char_min=4, char_max=5),
}
C_GRID = (3.0, 10.0, 30.0)
KEEP_GRID = (2000, 3000)
# rules below this confidence: the model may decide. Only inside the rules' guessing band
# (below 0.5, where ``bringup diagnose`` says no rule is sure): a rule that names a cause
# keeps it, because the model reads words alone, never the exit status or the stage. (On the
# 609 unseen-rules cases a threshold of 0.7 scored higher; it let two words overrule an exit
# status of 139.)
THRESHOLDS = (0.3, 0.4, 0.45)
P_MIN_GRID = (0.0, 0.2, 0.3, 0.4, 0.5)
# where the rules found no failure signal at all, the model names a cause only when it is
# more likely right than not (calibrated p >= 0.5): else the log still says it has no signal
P_MIN_UNKNOWN_GRID = (0.5, 0.6, 0.7, 1.01)  # 1.01: never
MIN_DF = 2
# the second stage (bringup.diagnose.learned_stack): its regularisation, and the rules'
# confidence below which it decides (1.01: always, below a confidence no rule gives)
STACK_C_GRID = (0.03, 0.1, 0.3)
STACK_THRESHOLDS = (0.45, 0.5, 0.6, 0.7, 0.85, 1.01)


@dataclass(frozen=True)
class Case:
    log: str
    category: str
    group: str
    rule_label: str  # what today's rules alone show ("unknown" without a signal)
    rule_conf: float
    # the rules' answer before any rule writer read the case (rules_unseen.jsonl), if known
    unseen_label: str | None = None
    unseen_conf: float | None = None

    def unseen(self) -> Case:
        """The case as the rules answered it before they had read it."""
        assert self.unseen_label is not None and self.unseen_conf is not None
        return replace(self, rule_label=self.unseen_label, rule_conf=self.unseen_conf)


@dataclass(frozen=True)
class ModelChoice:
    features: str
    c: float
    keep: int


@dataclass(frozen=True)
class Combine:
    threshold: float
    p_min: float
    temperature: float
    p_min_unknown: float = 1.01


def load_cases() -> list[Case]:
    unseen = {
        r["id"]: r for r in map(json.loads, (DATA / "rules_unseen.jsonl").read_text().splitlines())
    }
    out = []
    for name in ALLOWED:
        for line in (DATA / f"{name}.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            raw = json.loads(line)
            d = classify(
                raw["log"], engine=raw.get("engine"), exit_code=raw.get("exit_code"), learned=False
            )
            then = unseen.get(raw["id"])
            out.append(
                Case(
                    raw["log"],
                    raw["category"],
                    raw["source"].split("#")[0].lower(),
                    d.label,
                    d.confidence,
                    None if then is None else str(then["label"]),
                    None if then is None else float(then["confidence"]),
                )
            )
    return out


_TERMS: dict[tuple[FeatureSettings, str], list[str]] = {}


def _memo_features(text: str, settings: FeatureSettings) -> list[str]:
    """``features`` itself, remembered per log: cross-validation refits on the same logs
    hundreds of times (the export fits with ``features`` directly)."""
    key = (settings, text)
    if key not in _TERMS:
        _TERMS[key] = features(text, settings)
    return _TERMS[key]


def _vectorizer(
    settings: FeatureSettings, vocabulary: list[str] | None, memo: bool = True
) -> TfidfVectorizer:
    return TfidfVectorizer(
        analyzer=partial(_memo_features if memo else features, settings=settings),
        min_df=1 if vocabulary is not None else MIN_DF,
        vocabulary=vocabulary,
        sublinear_tf=True,
        norm="l2",
        smooth_idf=True,
    )


def fit_model(
    logs: Sequence[str], labels: Sequence[str], choice: ModelChoice, memo: bool = True
) -> tuple[TfidfVectorizer, LogisticRegression]:
    """Fit on all terms, keep the ``keep`` terms of largest weight, refit on those alone."""
    settings = FEATURE_GRID[choice.features]
    vec = _vectorizer(settings, None, memo)
    x = vec.fit_transform(logs)
    model = LogisticRegression(C=choice.c, max_iter=3000)
    model.fit(x, labels)
    terms = vec.get_feature_names_out()
    if len(terms) > choice.keep:
        strength = np.abs(model.coef_).max(axis=0)
        kept = sorted(terms[np.argsort(-strength)[: choice.keep]].tolist())
        vec = _vectorizer(settings, kept, memo)
        x = vec.fit_transform(logs)
        model = LogisticRegression(C=choice.c, max_iter=3000)
        model.fit(x, labels)
    return vec, model


def _folds(
    groups: Sequence[str], seed: int, n_splits: int = 5
) -> list[tuple[NDArray[Any], NDArray[Any]]]:
    idx = np.arange(len(groups))
    kf = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return list(kf.split(idx, groups=np.asarray(groups)))


# logits, classes, and how many words and word pairs of each log the model knows
Run = tuple[NDArray[Any], list[str], NDArray[Any]]


def oof_logits(
    cases: Sequence[Case], choice: ModelChoice, folds: list[tuple[NDArray[Any], NDArray[Any]]]
) -> Run:
    """Out-of-fold decision values (log-odds before softmax) for every case; columns in
    the order of the sorted category names (a fold lacking a category gets -inf there); and
    how many words and word pairs of each log the fold's model knows (the runtime declines to
    decide below ``MIN_WORDS``, or ``MIN_WORDS_NO_SIGNAL`` where no rule found a signal)."""
    classes = sorted({c.category for c in cases})
    out = np.full((len(cases), len(classes)), -np.inf)
    known_words = np.zeros(len(cases), dtype=int)
    settings = FEATURE_GRID[choice.features]
    for train, test in folds:
        vec, model = fit_model(
            [cases[i].log for i in train], [cases[i].category for i in train], choice
        )
        dec = model.decision_function(vec.transform([cases[i].log for i in test]))
        cols = [classes.index(k) for k in model.classes_]
        out[np.ix_(test, cols)] = dec
        known = vec.vocabulary_
        for i in test:
            words = {t for t in _memo_features(cases[i].log, settings) if t in known}
            known_words[i] = len({t for t in words if not t.startswith("c:")})
    return out, classes, known_words


def softmax(logits: NDArray[Any], temperature: float) -> NDArray[Any]:
    z = logits / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


def fit_temperature(logits: NDArray[Any], truth: NDArray[Any]) -> float:
    """The temperature of least log-loss (a grid: one number, no optimiser needed)."""
    best, best_t = math.inf, 1.0
    for t in np.exp(np.linspace(math.log(0.2), math.log(5.0), 81)):
        p = softmax(logits, float(t))[np.arange(len(truth)), truth]
        loss = -float(np.log(np.clip(p, 1e-12, 1.0)).mean())
        if loss < best:
            best, best_t = loss, float(t)
    return round(best_t, 3)


def combine(cases: Sequence[Case], run: Run, how: Combine) -> list[tuple[str, float, bool]]:
    """(label, confidence, decided by the model) for each case, as the runtime combines."""
    logits, classes, known_words = run
    probs = softmax(logits, how.temperature)
    out = []
    for case, p, words in zip(cases, probs, known_words, strict=True):
        k = int(p.argmax())
        no_signal = case.rule_label == UNKNOWN
        need = how.p_min_unknown if no_signal else how.p_min
        # the runtime's guard (learned.fallback), applied in every figure here as there
        if case.rule_conf < how.threshold and p[k] >= need and not declines(words, not no_signal):
            out.append((classes[k], float(p[k]), classes[k] != case.rule_label))
        else:
            out.append((case.rule_label, case.rule_conf, False))
    return out


@dataclass(frozen=True)
class StackChoice:
    c: float
    threshold: float
    p_min_unknown: float


def stack_matrix(cases: Sequence[Case], run: Run) -> NDArray[Any]:
    """The second stage's inputs for each case, made by the runtime's own function from the
    model's out-of-fold probabilities (temperature 1) and the rules' answer."""
    logits, classes, known_words = run
    probs = softmax(np.where(np.isfinite(logits), logits, -1e9), 1.0)
    return np.array(
        [
            stack_inputs(p.tolist(), classes, c.rule_label, c.rule_conf, int(w))
            for c, p, w in zip(cases, probs, known_words, strict=True)
        ]
    )


def fit_stack(x: NDArray[Any], labels: Sequence[str], c: float) -> LogisticRegression:
    model = LogisticRegression(C=c, max_iter=5000)
    model.fit(x, np.asarray(labels))
    return model


def stack_decide(
    cases: Sequence[Case],
    known_words: NDArray[Any],
    probs: NDArray[Any],
    classes: Sequence[str],
    threshold: float,
    p_min_unknown: float,
) -> list[tuple[str, float, bool]]:
    """(label, confidence, decided by the model) as ``learned.fallback`` decides with a
    second stage: below ``threshold``, past the known-words guard, and where the rules found
    no signal only at ``p_min_unknown``."""
    out = []
    for case, p, words in zip(cases, probs, known_words, strict=True):
        k = int(p.argmax())
        no_signal = case.rule_label == UNKNOWN
        declined = declines(words, not no_signal)
        if case.rule_conf < threshold and not declined and (not no_signal or p[k] >= p_min_unknown):
            out.append((classes[k], min(float(p[k]), CEILING), classes[k] != case.rule_label))
        else:
            out.append((case.rule_label, case.rule_conf, False))
    return out


def _oof_stack(
    cases: Sequence[Case], x: NDArray[Any], c: float, seed: int
) -> tuple[NDArray[Any], list[str]]:
    """Out-of-fold second-stage probabilities, folds grouped by repository."""
    classes = sorted({k.category for k in cases})
    out = np.zeros((len(cases), len(classes)))
    for train, test in _folds([k.group for k in cases], seed):
        model = fit_stack(x[train], [cases[i].category for i in train], c)
        cols = [classes.index(k) for k in model.classes_]
        out[np.ix_(test, cols)] = model.predict_proba(x[test])
    return out, classes


def choose_stack(
    cases: Sequence[Case], x: NDArray[Any], known_words: NDArray[Any], seed: int
) -> tuple[StackChoice, float]:
    """The stage's C, threshold and least probability without a signal, by grouped
    out-of-fold accuracy on these cases (ties: a lower threshold, a higher least p)."""
    best: tuple[tuple[float, float, float], StackChoice] | None = None
    for c in STACK_C_GRID:
        probs, classes = _oof_stack(cases, x, c, seed)
        for threshold, p_unknown in itertools.product(STACK_THRESHOLDS, P_MIN_UNKNOWN_GRID):
            got = stack_decide(cases, known_words, probs, classes, threshold, p_unknown)
            acc = _acc([g[0] == k.category for g, k in zip(got, cases, strict=True)])
            key = (acc, -threshold, p_unknown)
            if best is None or key > best[0]:
                best = (key, StackChoice(c, threshold, p_unknown))
    assert best is not None
    return best[1], best[0][0]


# one fold's answers: (train indices, test indices, the seed's run, the seed) -> results
FoldDecider = Callable[[NDArray[Any], NDArray[Any], Run, int], list[tuple[str, float, bool]]]


def _nested(
    unseen: Sequence[Case],
    runs: Sequence[Run],
    seeds: Sequence[int],
    decide: FoldDecider,
    title: str,
) -> list[dict[str, float]]:
    """Per seed, every unseen case answered by what ``decide`` chose and fitted on the other
    folds' repositories only (grouped folds), reported under ``title``."""
    out = []
    for seed, run in zip(seeds, runs, strict=True):
        results: list[tuple[str, float, bool]] = [("", 0.0, False)] * len(unseen)
        for train, test in _folds([c.group for c in unseen], seed + 100):
            for i, g in zip(test, decide(train, test, run, seed), strict=True):
                results[i] = g
        out.append(report(title.format(seed=seed), unseen, results))
    return out


def nested_stack(
    unseen: Sequence[Case], runs: Sequence[Run], seeds: Sequence[int]
) -> list[dict[str, float]]:
    """The second stage, chosen and fitted inside grouped folds of the unseen cases (on the
    other repositories' cases only), applied to the fold's own cases."""
    matrices = {id(run): stack_matrix(unseen, run) for run in runs}

    def decide(
        train: NDArray[Any], test: NDArray[Any], run: Run, seed: int
    ) -> list[tuple[str, float, bool]]:
        x, words = matrices[id(run)], run[2]
        part = [unseen[i] for i in train]
        how, _ = choose_stack(part, x[train], words[train], seed + 200)
        model = fit_stack(x[train], [c.category for c in part], how.c)
        return stack_decide(
            [unseen[i] for i in test],
            words[test],
            model.predict_proba(x[test]),
            model.classes_.tolist(),
            how.threshold,
            how.p_min_unknown,
        )

    title = f"nested grouped CV, seed {{seed}}, SECOND STAGE: {UNSEEN} with the rules that"
    return _nested(
        unseen, runs, seeds, decide, title + " had not read them (fit data: a fit figure)"
    )


def stack_document(model: LogisticRegression, classes: Sequence[str]) -> dict[str, Any]:
    return {
        "version": STACK_VERSION,
        "inputs": (
            f"model p and log p over {list(classes)}; rules' label one-hot over "
            f"{list(rule_labels(classes))}, and the same times the rules' confidence; the "
            "confidence; log(1 + known words); 1 where the rules found no signal"
        ),
        "classes": model.classes_.tolist(),
        "coef": [[round(float(v), 6) for v in row] for row in model.coef_],
        "intercept": [round(float(v), 6) for v in model.intercept_],
    }


def _acc(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else float("nan")


def choose_combine(cases: Sequence[Case], run: Run) -> tuple[Combine, float]:
    logits, classes, known_words = run
    truth = np.array([classes.index(c.category) for c in cases])
    tail = np.array([c.rule_conf < TAIL for c in cases]) & (known_words >= MIN_WORDS)
    temperature = fit_temperature(logits[tail], truth[tail]) if tail.any() else 1.0
    best: tuple[float, Combine] | None = None
    for threshold, p_min, p_unknown in itertools.product(
        THRESHOLDS, P_MIN_GRID, P_MIN_UNKNOWN_GRID
    ):
        how = Combine(threshold, p_min, temperature, p_unknown)
        got = combine(cases, run, how)
        acc = _acc([g[0] == c.category for g, c in zip(got, cases, strict=True)])
        # ties go to the smaller change: a lower threshold, then higher least probabilities
        key = (acc, -threshold, p_min, p_unknown)
        if best is None or key > (
            best[0],
            -best[1].threshold,
            best[1].p_min,
            best[1].p_min_unknown,
        ):
            best = (acc, how)
    assert best is not None
    return best[1], best[0]


def choose_model(
    cases: Sequence[Case], seeds: Sequence[int], grid: Sequence[tuple[str, float, int]]
) -> tuple[ModelChoice, list[Run], dict[str, Any]]:
    """The model of best out-of-fold accuracy over all cases (mean over the seeds' fold
    assignments), with its out-of-fold decision values per seed."""
    best: tuple[float, ModelChoice, list[Run]] | None = None
    table: dict[str, Any] = {}
    fold_sets = [_folds([c.group for c in cases], s) for s in seeds]
    tail = [i for i, c in enumerate(cases) if c.unseen_conf is not None and c.unseen_conf < TAIL]
    for name, c, keep in grid:
        choice = ModelChoice(name, c, keep)
        runs = [oof_logits(cases, choice, folds) for folds in fold_sets]
        accs, tails = [], []
        for logits, classes, _ in runs:
            ok = [
                classes[int(r.argmax())] == k.category for r, k in zip(logits, cases, strict=True)
            ]
            accs.append(_acc(ok))
            tails.append(_acc([ok[i] for i in tail]))
        acc = float(np.mean(accs))
        table[f"{name} C={c} keep={keep}"] = {"model": acc, "model_unseen_tail": np.mean(tails)}
        print(
            f"  {name:18} C={c:<5} keep={keep:<5} model={acc:.4f} "
            f"(per seed {' '.join(f'{a:.3f}' for a in accs)}); on the unseen rules' <{TAIL} "
            f"tail {np.mean(tails):.4f} n={len(tail)}",
            flush=True,
        )
        if best is None or acc > best[0]:
            best = (acc, choice, runs)
    assert best is not None
    return best[1], best[2], table


def bands(results: Sequence[tuple[str, float, bool]], cases: Sequence[Case]) -> list[str]:
    lines = []
    for lo, hi in BANDS:
        ok = [g[0] == c.category for g, c in zip(results, cases, strict=True) if lo <= g[1] < hi]
        label = f"[{lo:.2f},{min(hi, 1.0):.2f}{']' if hi > 1 else ')'}"
        lines.append(f"{label:12} {_acc(ok):6.2f} {len(ok):4d}")
    return lines


def report(
    title: str, cases: Sequence[Case], results: Sequence[tuple[str, float, bool]]
) -> dict[str, float]:
    rules_ok = [c.rule_label == c.category for c in cases]
    comb_ok = [g[0] == c.category for g, c in zip(results, cases, strict=True)]
    tail = [i for i, c in enumerate(cases) if c.rule_conf < TAIL]
    figures = {
        "n": len(cases),
        "rules": _acc(rules_ok),
        "combined": _acc(comb_ok),
        "tail_n": len(tail),
        "tail_rules": _acc([rules_ok[i] for i in tail]),
        "tail_combined": _acc([comb_ok[i] for i in tail]),
        "model_decided": sum(g[2] for g in results),
    }
    print(f"\n{title}")
    print(
        f"  overall       rules-only={figures['rules']:.4f}  "
        f"rules+fallback={figures['combined']:.4f}  n={len(cases)}"
    )
    print(
        f"  rules <{TAIL}    rules-only={figures['tail_rules']:.4f}  "
        f"rules+fallback={figures['tail_combined']:.4f}  n={len(tail)}"
    )
    print(f"  verdicts changed by the model: {figures['model_decided']}")
    print("  by confidence band (rules+fallback):")
    for line in bands(results, cases):
        print("    " + line)
    rules_only = [(c.rule_label, c.rule_conf, False) for c in cases]
    print("  by confidence band (rules only):")
    for line in bands(rules_only, cases):
        print("    " + line)
    return figures


def nested_combine(
    unseen: Sequence[Case], runs: Sequence[Run], seeds: Sequence[int]
) -> list[dict[str, float]]:
    """Temperature, threshold and p_min chosen inside grouped folds of the unseen cases (on
    the other repositories' cases only), applied to the fold's own cases."""

    def decide(
        train: NDArray[Any], test: NDArray[Any], run: Run, seed: int
    ) -> list[tuple[str, float, bool]]:
        logits, classes, words = run
        how, _ = choose_combine([unseen[i] for i in train], (logits[train], classes, words[train]))
        return combine([unseen[i] for i in test], (logits[test], classes, words[test]), how)

    title = f"nested grouped CV, seed {{seed}}: {UNSEEN} with the rules that had not read them"
    return _nested(unseen, runs, seeds, decide, title + " (fit data: a fit figure)")


def model_document(
    vec: TfidfVectorizer,
    model: LogisticRegression,
    settings: FeatureSettings,
    how: Combine,
    cases: int,
    cv: dict[str, Any],
    stack: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The fitted vectorizer and model as the JSON :mod:`bringup.diagnose.learned` reads."""
    return {
        "stack": stack,
        "schema_version": SCHEMA_VERSION,
        "features_version": FEATURES_VERSION,
        "trained": dt.date.today().isoformat(),
        "trained_on": {"files": list(ALLOWED), "cases": cases},
        "features": settings.to_dict(),
        "tfidf": {"sublinear_tf": True, "norm": "l2", "smooth_idf": True},
        "classes": model.classes_.tolist(),
        "vocabulary": vec.get_feature_names_out().tolist(),
        "idf": [round(float(v), 6) for v in vec.idf_],
        "coef": [[round(float(v), 5) for v in row] for row in model.coef_],
        "intercept": [round(float(v), 6) for v in model.intercept_],
        "temperature": how.temperature,
        "threshold": how.threshold,
        "p_min": how.p_min,
        "p_min_unknown": how.p_min_unknown,
        "cv": cv,
    }


def export(
    cases: Sequence[Case],
    choice: ModelChoice,
    how: Combine,
    cv: dict[str, Any],
    path: Path,
    stack: dict[str, Any] | None = None,
) -> None:
    vec, model = fit_model([c.log for c in cases], [c.category for c in cases], choice, memo=False)
    doc = model_document(vec, model, FEATURE_GRID[choice.features], how, len(cases), cv, stack)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"\nwrote {path} ({path.stat().st_size} bytes, {len(doc['vocabulary'])} terms)")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="fold shuffles per figure")
    ap.add_argument("--no-export", action="store_true")
    ap.add_argument(
        "--only",
        metavar="FEATURES:C:KEEP",
        action="append",
        help="skip the model grid: choose among these settings only (repeatable; e.g. "
        "words+pairs+chars:30:2000)",
    )
    args = ap.parse_args(argv)
    grid = list(itertools.product(FEATURE_GRID, C_GRID, KEEP_GRID))
    if args.only:
        grid = [(name, float(c), int(keep)) for name, c, keep in (o.split(":") for o in args.only)]
    cases = load_cases()
    seeds = list(range(args.repeats))
    print(f"cases={len(cases)} repositories={len({c.group for c in cases})} files={ALLOWED}")
    print("model selection (grouped 5-fold CV by repository, out-of-fold accuracy):")
    choice, runs, table = choose_model(cases, seeds, grid)
    print(f"chosen model: {choice.features} C={choice.c} keep={choice.keep}")
    where = [i for i, c in enumerate(cases) if c.unseen_label is not None]
    unseen = [cases[i].unseen() for i in where]
    unseen_runs: list[Run] = [(lg[where], classes, kw[where]) for lg, classes, kw in runs]
    figs = nested_combine(unseen, unseen_runs, seeds)
    stacked: Run = (
        np.concatenate([r[0] for r in unseen_runs]),
        unseen_runs[0][1],
        np.concatenate([r[2] for r in unseen_runs]),
    )
    how, _ = choose_combine([c for _ in seeds for c in unseen], stacked)
    print(
        f"\nchosen combination (on all {len(unseen)} unseen-rules cases): the model decides "
        f"below rule confidence {how.threshold} when its p >= {how.p_min} (where the rules "
        f"found no signal: p >= {how.p_min_unknown}); temperature {how.temperature}"
    )
    today = [
        report(
            f"today's rules on all {len(cases)} allowed cases, grouped CV seed {seed} (the "
            "rules' part is a fit figure: they were written from these cases)",
            cases,
            combine(cases, run, how),
        )
        for seed, run in zip(seeds, runs, strict=True)
    ]
    mean = {k: float(np.mean([f[k] for f in figs])) for k in figs[0]}
    print(
        f"\nnested mean on {UNSEEN} (rules unseen), threshold combination: overall "
        f"rules={mean['rules']:.4f} combined={mean['combined']:.4f}; rules <{TAIL}: "
        f"rules={mean['tail_rules']:.4f} combined={mean['tail_combined']:.4f} "
        f"(n={mean['tail_n']:.0f})"
    )
    stack_figs = nested_stack(unseen, unseen_runs, seeds)
    smean = {k: float(np.mean([f[k] for f in stack_figs])) for k in stack_figs[0]}
    print(
        f"\nnested mean on {UNSEEN} (rules unseen), second stage: overall "
        f"rules={smean['rules']:.4f} combined={smean['combined']:.4f}; rules <{TAIL}: "
        f"rules={smean['tail_rules']:.4f} combined={smean['tail_combined']:.4f}"
    )
    x = stack_matrix(unseen, unseen_runs[0])
    stack_how, _ = choose_stack(unseen, x, unseen_runs[0][2], 200)
    stack_model = fit_stack(x, [c.category for c in unseen], stack_how.c)
    print(
        f"chosen second stage (on all {len(unseen)} unseen-rules cases): C={stack_how.c}, it "
        f"decides below rule confidence {stack_how.threshold} (where the rules found no "
        f"signal: p >= {stack_how.p_min_unknown})"
    )
    how = replace(
        how, threshold=stack_how.threshold, p_min=0.0, p_min_unknown=stack_how.p_min_unknown
    )
    cv: dict[str, Any] = {
        "folds": "5-fold GroupKFold by owner/repo, shuffled; mean over seeds",
        "seeds": seeds,
        "model_grid": table,
        "unseen_rules_nested": figs,
        "unseen_rules_nested_stack": stack_figs,
        "stack_c": stack_how.c,
        "today_rules": today,
    }
    if not args.no_export:
        export(cases, choice, how, cv, MODEL_PATH, stack_document(stack_model, unseen_runs[0][1]))
    print(f"cv_combined={smean['combined']:.4f} cv_rules={smean['rules']:.4f} n={len(unseen)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
