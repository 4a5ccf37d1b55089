"""The learned fallback: its exported model, its pure-Python application (equal to
scikit-learn's where that is installed) and how it joins the rules' diagnosis."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bringup.diagnose import classify
from bringup.diagnose.learned import (
    CEILING,
    MIN_WORDS_NO_SIGNAL,
    MODEL_PATH,
    SCHEMA_VERSION,
    LearnedModel,
    fallback,
    load,
)
from bringup.diagnose.learned_features import FEATURES_VERSION, FeatureSettings, features
from bringup.diagnose.learned_stack import Stack, n_inputs, stack_inputs
from bringup.diagnose.ruleset import GENERIC_REMEDIES
from bringup.verdict import Category, Stage

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "diagnose"
SEALED = ("heldout12", "heldout13")


def _fit_cases() -> list[dict[str, Any]]:
    lines = (DATA / "fit.jsonl").read_text().splitlines()
    return [json.loads(ln) for ln in lines if ln.strip()]


def test_the_exported_model_has_its_schema() -> None:
    doc = json.loads(MODEL_PATH.read_text())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["features_version"] == FEATURES_VERSION
    assert set(doc["classes"]) <= {c.value for c in Category}
    n = len(doc["vocabulary"])
    assert len(doc["idf"]) == n and len(set(doc["vocabulary"])) == n
    assert all(len(row) == n for row in doc["coef"]) and len(doc["coef"]) == len(doc["classes"])
    # a threshold above 1 (1.01): the second stage decides whatever the rules' confidence
    assert 0.0 < doc["threshold"] <= 1.01 and 0.0 <= doc["p_min"] < 1.0
    assert doc["p_min_unknown"] >= 0.5  # a log without a signal is named only when likely
    assert doc["temperature"] > 0
    # trained on fit and the retired sets only, never a sealed set
    assert not set(doc["trained_on"]["files"]) & set(SEALED)
    assert MODEL_PATH.stat().st_size < 400_000  # the vocabulary is pruned
    # the export carries its second stage, and the runtime reads it
    assert doc["stack"]["classes"] == doc["classes"]
    assert load().stack is not None


def test_a_model_of_another_schema_or_tokenizer_is_refused() -> None:
    doc = json.loads(MODEL_PATH.read_text())
    with pytest.raises(ValueError, match="schema"):
        LearnedModel.from_json({**doc, "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(ValueError, match="retrain"):
        LearnedModel.from_json({**doc, "features_version": FEATURES_VERSION + 1})


def test_the_runtime_reproduces_the_trained_model_on_its_training_logs() -> None:
    """Applied by hand, the model classifies the logs it was fitted on as a fitted linear
    model does (nearly all right): a tokenizer or dot product that drifted from the
    trainer's would not."""
    model = load()
    cases = _fit_cases()
    right = 0
    for case in cases:
        probs = model.probabilities(case["log"], calibrated=False)
        assert math.isclose(sum(probs.values()), 1.0, rel_tol=1e-9)
        right += max(probs, key=lambda k: probs[k]) == case["category"]
    assert right / len(cases) > 0.9


def test_calibration_changes_confidence_not_the_answer() -> None:
    model = load()
    log = _fit_cases()[0]["log"]
    raw = model.probabilities(log, calibrated=False)
    cal = model.probabilities(log)
    assert max(raw, key=lambda k: raw[k]) == max(cal, key=lambda k: cal[k])


def test_features_fold_numbers_addresses_and_logger_prefixes() -> None:
    s = FeatureSettings(bigrams=True)
    a = features("INFO 08-11 10:45:36 [core.py:12] Tried to allocate 20.00 GiB at 0x7f3a", s)
    b = features("INFO 01-02 03:04:05 [core.py:99] Tried to allocate 3.5 GiB at 0x11", s)
    assert a == b
    assert "w:allocate" in a and "b:tried to" in a
    with_chars = features(
        "cudaErrorNoKernelImageForDevice", FeatureSettings(char_min=4, char_max=4)
    )
    assert "c:kern" in with_chars


def _toy(
    threshold: float = 0.5,
    p_min: float = 0.4,
    p_min_unknown: float = 0.5,
    stack: dict[str, Any] | None = None,
) -> LearnedModel:
    """Two classes: "w:allocate" pulls to oom_gpu, "w:segfault" to runtime_crash; five more
    known words weigh nothing."""
    return LearnedModel.from_json(
        {
            "schema_version": SCHEMA_VERSION,
            "features_version": FEATURES_VERSION,
            "trained_on": {"files": ["fit"], "cases": 7},
            "features": FeatureSettings(bigrams=False).to_dict(),
            "classes": ["oom_gpu", "runtime_crash"],
            "vocabulary": [
                *("w:allocate", "w:segfault", "w:worker", "w:could"),
                *("w:the", "w:not", "w:nothing"),
            ],
            "idf": [1.0] * 7,
            "coef": [[1.0, -1.0, *[0.0] * 5], [-1.0, 1.0, *[0.0] * 5]],
            "intercept": [0.0, 0.0],
            "temperature": 1.0,
            "threshold": threshold,
            "p_min": p_min,
            "p_min_unknown": p_min_unknown,
            "stack": stack,
        }
    )


def test_the_fallback_decides_where_no_rule_is_sure_and_says_so() -> None:
    few = "could not allocate\nnothing else"
    rules = classify(few, learned=False)
    assert not rules.signal
    # four words it knows: enough beside a rule's weak signal, not where there is none
    assert fallback(rules, few, _toy()) is rules
    log = "the worker could not allocate\nnothing else"
    rules = classify(log, learned=False)
    assert not rules.signal and rules.confidence < 0.5
    d = fallback(rules, log, _toy())
    assert d.category is Category.OOM_GPU and d.learned and d.rule is None
    assert d.remedy == GENERIC_REMEDIES[Category.OOM_GPU]  # the category's, no rule's
    assert d.flags == []
    assert "a model trained on 7 public logs says oom_gpu with p=0.69" in d.evidence[0]
    assert "could not allocate" in d.evidence[1]  # the line that weighed most
    assert d.confidence == 0.69
    text = d.explain()
    assert "learned fallback" in text and "decided by rule" not in text
    assert d.to_dict()["learned"] is True


def test_the_fallback_leaves_sure_rules_weak_models_and_unknown_terms_alone() -> None:
    sure = classify("torch.OutOfMemoryError: CUDA out of memory.", learned=False)
    assert sure.confidence >= 0.5
    assert fallback(sure, "segfault segfault", _toy()) is sure
    log = "the worker could not allocate\nnothing else"
    weak = classify(log, learned=False)
    assert fallback(weak, log, _toy(p_min=0.99, p_min_unknown=0.99)) is weak
    assert not weak.signal and fallback(weak, log, _toy(p_min=0.0, p_min_unknown=0.9)) is weak
    # no term the model knows: a log with no signal stays unknown, with low confidence
    empty = classify("", learned=False)
    assert fallback(empty, "", _toy()) is empty
    plain = classify("hello there\nall fine", learned=False)
    kept = fallback(plain, "hello there\nall fine", _toy())
    assert kept.label == "unknown" and kept.guessing


def test_a_model_that_agrees_with_a_guessing_rule_keeps_the_rule() -> None:
    log = "worker could segfault\nSegmentation fault (core dumped)"
    rules = classify(log, learned=False)
    assert rules.category is Category.RUNTIME_CRASH and rules.rule
    d = fallback(rules, log, _toy(threshold=1.0))
    assert d.rule == rules.rule and not d.learned and d.remedy == rules.remedy
    assert d.evidence[1:] == rules.evidence and "says runtime_crash" in d.evidence[0]
    assert d.confidence == 0.76  # the model's calibrated probability


def test_a_log_without_any_signal_stays_unknown_with_the_real_model() -> None:
    for log in ("", "\n\n", "hello", "ok", "hello there"):
        d = classify(log)
        assert d.label == "unknown" and d.confidence < 0.5


def test_a_trial_log_is_diagnosed_by_the_rules_alone() -> None:
    log = "the worker could not allocate\nnothing else"
    at_stage = classify(log, exit_code=1, stage=Stage.LAUNCHING)
    rules = classify(log, exit_code=1, stage=Stage.LAUNCHING, learned=False)
    assert at_stage == rules


def _trainer() -> ModuleType:
    pytest.importorskip("sklearn")
    path = ROOT / "bench" / "diagnose_train.py"
    spec = importlib.util.spec_from_file_location("diagnose_train", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["diagnose_train"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_runtime_probabilities_equal_scikit_learns() -> None:
    train = _trainer()
    cases = _fit_cases()[:120]
    choice = train.ModelChoice("words+pairs+chars", 10.0, 300)
    logs = [c["log"] for c in cases]
    vec, model = train.fit_model(logs, [c["category"] for c in cases], choice, memo=False)
    doc = train.model_document(
        vec,
        model,
        train.FEATURE_GRID[choice.features],
        train.Combine(0.5, 0.0, 1.0),
        len(cases),
        {},
    )
    mine = LearnedModel.from_json(json.loads(json.dumps(doc)))
    others = [c["log"] for c in _fit_cases()[200:205]]
    want = model.predict_proba(vec.transform(logs[:5] + others))
    for log, row in zip(logs[:5] + others, want, strict=True):
        got = mine.probabilities(log, calibrated=False)
        for k, cls in enumerate(model.classes_):
            # the export rounds weights to 5 decimals
            assert got[cls] == pytest.approx(row[k], abs=1e-3)


def test_the_trainer_combines_with_the_runtimes_guard() -> None:
    """Four known words are enough beside a weak rule, not where no rule found a signal:
    the figures the trainer chooses by must decline where the runtime declines."""
    train = _trainer()
    weak = train.Case("log", "oom_gpu", "a/b", "runtime_crash", 0.3)
    silent = train.Case("log", "oom_gpu", "a/b", train.UNKNOWN, 0.1)
    np = train.np  # numpy comes with the trainer's extra
    logits = np.array([[3.0, 0.0], [3.0, 0.0]])
    run = (logits, ["oom_gpu", "runtime_crash"], np.array([4, 4]))
    got = train.combine([weak, silent], run, train.Combine(0.45, 0.3, 1.0, 0.5))
    assert got[0] == ("oom_gpu", pytest.approx(0.9526, abs=1e-4), True)
    assert got[1] == (train.UNKNOWN, 0.1, False)
    run = (logits, ["oom_gpu", "runtime_crash"], np.array([4, MIN_WORDS_NO_SIGNAL]))
    assert train.combine([weak, silent], run, train.Combine(0.45, 0.3, 1.0, 0.5))[1][0] == "oom_gpu"


def _toy_stack(rule_weight: float) -> dict[str, Any]:
    """A second stage over the toy model (2 classes: 2 + 2 + 3 + 3 + 3 = 13 inputs): the
    model's probabilities count once; a rule answering runtime_crash counts ``rule_weight``."""
    # inputs: p(oom), p(crash), log p x2, rule one-hot (oom, crash, unknown), the same x
    # confidence, confidence, log1p(known words), no signal
    oom = [1.0, 0.0, 0.0, 0.0, 0.0, -rule_weight, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    crash = [0.0, 1.0, 0.0, 0.0, 0.0, rule_weight, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    return {
        "version": 1,
        "classes": ["oom_gpu", "runtime_crash"],
        "coef": [oom, crash],
        "intercept": [0.0, 0.0],
    }


def test_a_second_stage_weighs_the_rules_answer_beside_the_words() -> None:
    """The same log and the same word model: where the stage trusts a weak crash rule, the
    crash stands (the rules' evidence and remedy); where it does not, the words' oom does."""
    log = "the worker could not allocate\nSegmentation fault (core dumped)"
    rules = classify(log, learned=False)
    assert rules.category is Category.RUNTIME_CRASH and rules.signal
    weak = replace(rules, confidence=0.4)
    trusting = fallback(weak, log, _toy(threshold=0.5, p_min=0.0, stack=_toy_stack(1.0)))
    assert trusting.category is Category.RUNTIME_CRASH and not trusting.learned
    assert trusting.remedy == rules.remedy and trusting.evidence[1:] == rules.evidence
    # five known words, "allocate" among them: the toy model's logits are +-1/sqrt(5), and
    # p(crash) = softmax(p_oom - 1, p_crash + 1)
    p_oom = 1 / (1 + math.exp(-2 / math.sqrt(5)))
    want = 1 / (1 + math.exp((p_oom - 1.0) - (1 - p_oom + 1.0)))
    assert round(want, 2) == 0.83
    assert trusting.confidence == round(want, 2)
    # however sure the stage, an answer read from words is no surer than the rules' ceiling
    certain = fallback(weak, log, _toy(threshold=0.5, p_min=0.0, stack=_toy_stack(20.0)))
    assert certain.category is Category.RUNTIME_CRASH and certain.confidence == CEILING == 0.95
    doubting = fallback(weak, log, _toy(threshold=0.5, p_min=0.0, stack=_toy_stack(0.0)))
    assert doubting.category is Category.OOM_GPU and doubting.learned
    # at or above the threshold the stage is not asked
    sure = replace(rules, confidence=0.5)
    assert fallback(sure, log, _toy(threshold=0.5, stack=_toy_stack(0.0))) is sure


def test_an_answer_the_exit_status_decided_is_not_overruled_by_words() -> None:
    log = "the worker could not allocate\n"
    rules = classify(log, exit_code=139, learned=False)
    assert rules.rule == "exit:SIGSEGV" and rules.category is Category.RUNTIME_CRASH
    weak = replace(rules, confidence=0.4)
    doubting = _toy(threshold=0.5, p_min=0.0, stack=_toy_stack(0.0))
    assert fallback(weak, log, doubting) is weak
    # the same words and stage overrule a weak crash that a log line decided
    read = replace(weak, rule="vllm:segfault")
    assert fallback(read, log, doubting).category is Category.OOM_GPU


def test_a_second_stage_of_the_wrong_shape_or_version_is_refused() -> None:
    with pytest.raises(ValueError, match="classes x inputs"):
        _toy(stack={**_toy_stack(1.0), "coef": [[0.0] * 12, [0.0] * 12]})
    with pytest.raises(ValueError, match="stack v"):
        _toy(stack={**_toy_stack(1.0), "version": 2})


def test_the_runtime_second_stage_equals_scikit_learns() -> None:
    """The stage fitted by the trainer, exported and applied by hand, gives scikit-learn's
    probabilities on inputs made by the one function both use."""
    train = _trainer()
    np = train.np
    rng = np.random.default_rng(0)
    classes = ["oom_gpu", "runtime_crash", "unsupported_hardware"]
    labels = [*classes, "unknown"]
    rows, truth = [], []
    for i in range(90):
        p = rng.dirichlet([1.0, 1.0, 1.0]).tolist()
        rule = labels[i % 4]
        conf = float(rng.uniform(0.1, 0.9))
        rows.append(stack_inputs(p, classes, rule, conf, int(rng.integers(0, 40))))
        truth.append(classes[int(np.argmax(p))] if i % 3 else classes[i % 3])
    x = np.array(rows)
    model = train.fit_stack(x, truth, 1.0)
    doc = train.stack_document(model, classes)
    mine = Stack.from_json(json.loads(json.dumps(doc)), n_inputs(classes))
    want = model.predict_proba(x[:10])
    for row, expect in zip(rows[:10], want, strict=True):
        got = mine.probabilities(row)
        for k, cls in enumerate(model.classes_):
            assert got[cls] == pytest.approx(expect[k], abs=1e-4)


def test_the_trainer_decides_with_the_second_stage_as_the_runtime_does() -> None:
    """Below the threshold and past the known-words guard the stage decides; where the rules
    found no signal it needs ``p_min_unknown``; at or above the threshold the rules stand."""
    train = _trainer()
    np = train.np
    weak = train.Case("log", "oom_gpu", "a/b", "runtime_crash", 0.3)
    silent = train.Case("log", "oom_gpu", "a/b", train.UNKNOWN, 0.1)
    sure = train.Case("log", "oom_gpu", "a/b", "runtime_crash", 0.8)
    probs = np.array([[0.45, 0.55], [0.45, 0.55], [0.9, 0.1]])
    probs[0] = [0.7, 0.3]
    classes = ["oom_gpu", "runtime_crash"]
    words = np.array([4, MIN_WORDS_NO_SIGNAL, 40])
    got = train.stack_decide([weak, silent, sure], words, probs, classes, 0.7, 0.6)
    assert got[0] == ("oom_gpu", pytest.approx(0.7), True)
    assert got[1] == (train.UNKNOWN, 0.1, False)  # p = 0.55 < 0.6 without a signal
    assert got[2] == ("runtime_crash", 0.8, False)  # sure rules are not asked
    got = train.stack_decide([silent], np.array([4]), np.array([[0.9, 0.1]]), classes, 0.7, 0.5)
    assert got[0] == (train.UNKNOWN, 0.1, False)  # four words: no evidence without a signal
