"""The learned fallback: a linear model over a log's terms, asked only where no rule is sure.

``learned_model.json`` (beside this module) is a TF-IDF + multinomial logistic regression
trained by ``bench/diagnose_train.py`` on public failure logs of ``bench/data/diagnose/``
(fit and the retired held-out sets only); its ``cv`` section holds the grouped
cross-validation figures every setting was chosen by. :func:`fallback` applies it to a
diagnosis the rules made: when their confidence is below the model's ``threshold`` and the
model's calibrated probability reaches ``p_min``, the model's category stands, with that
probability as its confidence, the category's generic remedy (no rule fired, so no rule's
remedy applies) and an evidence line that says a model decided. Where the rules found no
failure signal at all, the model names a cause only at ``p_min_unknown`` (never below 0.5:
more likely right than not); and it decides only in a log holding a few words it knows, so a
log with no signal (empty, or a few stray words) stays ``unknown``, with low confidence.

Where the export carries a second stage (:mod:`bringup.diagnose.learned_stack`), that stage,
not the model's probability alone, decides below the threshold: it reads the rules' answer and
confidence beside the model's probabilities and gives the probability that stands. The guards
are the same: the known words, and ``p_min_unknown`` where the rules found no signal. An
answer the exit status decided is never the model's to overrule (:func:`_by_exit_status`).

The model is applied by hand (:func:`LearnedModel.probabilities`: sparse TF-IDF, a dot product
per class, a softmax) rather than through scikit-learn: that is all a fitted linear model
does, and it keeps a heavy dependency out of the runtime. The terms come from
:func:`bringup.diagnose.learned_features.features`, the very function the trainer handed
scikit-learn as its analyzer, so training and runtime read a log the same way;
``tests/unit/test_diagnose_learned.py`` checks the probabilities against scikit-learn's.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from bringup.diagnose.diagnosis import Diagnosis
from bringup.diagnose.learned_features import FEATURES_VERSION, FeatureSettings, features
from bringup.diagnose.learned_stack import Stack, n_inputs, stack_inputs
from bringup.diagnose.logtext import dedupe_key, log_lines, redact
from bringup.diagnose.ruleset import GENERIC_REMEDIES
from bringup.verdict import Category

SCHEMA_VERSION = 1
MODEL_PATH = Path(__file__).with_name("learned_model.json")
_EVIDENCE_LINES = 2
# a few stray words the model knows ("hello") are no evidence: it decides only in a log
# holding this many known words or word pairs (character n-grams alone do not count)
MIN_WORDS = 3
# where no rule found a failure signal, a line or two of ordinary text is no evidence either
# ("INFO Loading LlamaForCausalLM weights took 3.2 s" names a model class and nothing else):
# the model needs about a sentence of words it knows there
MIN_WORDS_NO_SIGNAL = 6
# no answer read from words is surer than the rules' surest (the classifier's ceiling): a
# probability of 1.00 on a reporter's one line would claim what no sample here measured
CEILING = 0.95


def declines(known_words: int, signal: bool) -> bool:
    """Whether a log holds too few words the model knows for it to decide: the runtime's
    guard, which the trainer applies in every figure too."""
    return known_words < (MIN_WORDS if signal else MIN_WORDS_NO_SIGNAL)


@dataclass(frozen=True)
class LearnedModel:
    classes: tuple[str, ...]
    index: dict[str, int]  # term -> column
    idf: tuple[float, ...]
    coef: tuple[tuple[float, ...], ...]  # per column: one weight per class
    intercept: tuple[float, ...]
    temperature: float
    threshold: float  # the rules' confidence below which the model may decide
    p_min: float  # the least calibrated probability with which it decides
    p_min_unknown: float  # the same where the rules found no failure signal at all
    settings: FeatureSettings
    cases: int  # how many logs it was trained on
    stack: Stack | None = None  # the second stage, where the export has one

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LearnedModel:
        if doc.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(
                f"learned model schema {doc.get('schema_version')!r}, expected {SCHEMA_VERSION}"
            )
        if doc.get("features_version") != FEATURES_VERSION:
            raise ValueError(
                f"learned model made with features v{doc.get('features_version')!r}, this "
                f"code reads v{FEATURES_VERSION}: retrain it (bench/diagnose_train.py)"
            )
        vocab = doc["vocabulary"]
        classes = tuple(doc["classes"])
        rows = doc["coef"]
        if len(rows) != len(classes) or any(len(r) != len(vocab) for r in rows):
            raise ValueError("learned model: coef is not classes x vocabulary")
        if len(doc["idf"]) != len(vocab) or len(doc["intercept"]) != len(classes):
            raise ValueError("learned model: idf or intercept has the wrong length")
        unknown = set(classes) - {c.value for c in Category}
        if unknown:
            raise ValueError(f"learned model: unknown categories {sorted(unknown)}")
        return cls(
            classes=classes,
            index={term: j for j, term in enumerate(vocab)},
            idf=tuple(float(v) for v in doc["idf"]),
            coef=tuple(zip(*rows, strict=True)),
            intercept=tuple(float(v) for v in doc["intercept"]),
            temperature=float(doc["temperature"]),
            threshold=float(doc["threshold"]),
            p_min=float(doc["p_min"]),
            p_min_unknown=float(doc["p_min_unknown"]),
            settings=FeatureSettings.from_dict(doc["features"]),
            cases=int(doc["trained_on"]["cases"]),
            stack=(
                Stack.from_json(doc["stack"], n_inputs(classes))
                if doc.get("stack") is not None
                else None
            ),
        )

    def _weights(self, terms: list[str]) -> dict[int, float]:
        """Sublinear TF-IDF of the known terms, L2-normalised (scikit-learn's
        ``TfidfVectorizer(sublinear_tf=True, norm="l2")``)."""
        counts = Counter(self.index[t] for t in terms if t in self.index)
        raw = {j: (1.0 + math.log(n)) * self.idf[j] for j, n in counts.items()}
        norm = math.sqrt(sum(v * v for v in raw.values()))
        return {j: v / norm for j, v in raw.items()} if norm else {}

    def known_words(self, text: str) -> int:
        """How many distinct words and word pairs of the log the model knows."""
        return self.known_words_in(features(text, self.settings))

    def known_words_in(self, terms: list[str]) -> int:
        return len({t for t in terms if t in self.index and not t.startswith("c:")})

    def decide(
        self, terms: list[str], known_words: int, rule_label: str, rule_conf: float
    ) -> dict[str, float]:
        """Each category's probability for a log of these terms given the rules' answer:
        the second stage's where there is one, else the model's calibrated probabilities."""
        if self.stack is None:
            return self._probabilities(terms, calibrated=True)
        raw = self._probabilities(terms, calibrated=False)
        if not raw:
            return {}
        inputs = stack_inputs(
            [raw[k] for k in self.classes], self.classes, rule_label, rule_conf, known_words
        )
        return self.stack.probabilities(inputs)

    def probabilities(self, text: str, *, calibrated: bool = True) -> dict[str, float]:
        """Each category's probability for this log; empty when it holds no known term."""
        return self._probabilities(features(text, self.settings), calibrated=calibrated)

    def _probabilities(self, terms: list[str], *, calibrated: bool) -> dict[str, float]:
        weights = self._weights(terms)
        if not weights:
            return {}
        logits = list(self.intercept)
        for j, w in weights.items():
            for k, c in enumerate(self.coef[j]):
                logits[k] += c * w
        t = self.temperature if calibrated else 1.0
        top = max(logits)
        exps = [math.exp((v - top) / t) for v in logits]
        total = sum(exps)
        return {k: e / total for k, e in zip(self.classes, exps, strict=True)}

    def decisive_lines(self, text: str, category: str) -> list[str]:
        """The lines whose terms weigh most towards ``category`` (shown as evidence)."""
        k = self.classes.index(category)
        scored = []
        seen: set[str] = set()  # ranks repeat lines: each is shown once
        # the lines of the stretch the model read (a huge log: only its end)
        for i, line in enumerate(log_lines(text[-self.settings.max_chars :])):
            key = dedupe_key(line)
            if key in seen:
                continue
            seen.add(key)
            js = {self.index[t] for t in features(line, self.settings) if t in self.index}
            score = sum(self.coef[j][k] * self.idf[j] for j in js)
            if score > 0:
                scored.append((score, i, line))
        best = sorted(scored, key=lambda s: (-s[0], s[1]))[:_EVIDENCE_LINES]
        return [redact(line.rstrip()) for _, _, line in sorted(best, key=lambda s: s[1])]


@lru_cache(maxsize=1)
def load(path: Path = MODEL_PATH) -> LearnedModel:
    return LearnedModel.from_json(json.loads(path.read_text()))


def _by_exit_status(rules: Diagnosis) -> bool:
    """The exit status decided the rules' answer. No public log the model learned from
    carries one (``bringup diagnose --exit-code``, a trial's status), so its words have
    never been weighed against it: an answer the status decided is not the model's to
    overrule (a log reading "loading model" and a SIGSEGV is a crash, whatever the words)."""
    return rules.rule is not None and rules.rule.startswith("exit:")


def fallback(rules: Diagnosis, text: str, model: LearnedModel | None = None) -> Diagnosis:
    """The rules' diagnosis, or the model's where the rules are not sure and it is."""
    model = model or load()
    if rules.confidence >= model.threshold or _by_exit_status(rules):
        return rules
    terms = features(text, model.settings)  # read once: the guard and the model share them
    known = model.known_words_in(terms)
    if declines(known, rules.signal):
        return rules
    probs = model.decide(terms, known, rules.label, rules.confidence)
    if not probs:
        return rules
    label, p = max(probs.items(), key=lambda kv: kv[1])
    p = min(p, CEILING)
    if p < (model.p_min if rules.signal else model.p_min_unknown):
        return rules
    said = (
        f"no rule is sure (confidence {rules.confidence:.2f})"
        if rules.signal
        else ("no rule found a failure signal")
    )
    note = f"{said}; a model trained on {model.cases} public logs says {label} with p={p:.2f}"
    if rules.signal and label == rules.category.value:
        # the rules' own answer, now backed by the model: their evidence and remedy stand
        return replace(rules, evidence=[note, *rules.evidence], confidence=round(p, 2))
    category = Category(label)
    return Diagnosis(
        category,
        [note, *model.decisive_lines(text, label)],
        GENERIC_REMEDIES.get(category),
        round(p, 2),
        learned=True,
    )
