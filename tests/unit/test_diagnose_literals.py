"""The literal prefilter never skips a line a rule matches, and a 5,000-line log of long
error lines still gets the verdict of its decisive line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bringup.diagnose import classify
from bringup.diagnose.literals import LiteralIndex, may_match, needed
from bringup.diagnose.logtext import content
from bringup.diagnose.ruleset import ALL
from bringup.testing.noisylog import noisy_error_log
from bringup.verdict import Category

FIT = Path(__file__).parents[2] / "bench" / "data" / "diagnose" / "fit.jsonl"


@pytest.mark.parametrize(
    ("pattern", "flags", "want"),
    [
        (r"CUDA out of memory", re.I, {"cuda out of memory"}),
        # a run of literals and alternations of literals stands for each string it can be
        (r"foo(?:bar|baz)qux", 0, {"foobarqux", "foobazqux"}),
        (r"(?:alpha|beta) gamma", re.I, {"alpha gamma", "beta gamma"}),
        (r"timeout (?:after|expired)\b", re.I, {"timeout after", "timeout expired"}),
        (r"bad (?:moe )?backend", re.I, {"bad backend", "bad moe backend"}),
        # too many combinations: the run is cut where it would grow past the limit
        (r"[abcd][efgh][ijkl]xyz", 0, {"ixyz", "jxyz", "kxyz", "lxyz"}),
        (r"(?:alphabet|betamax)\d+", 0, {"alphabet", "betamax"}),
        (r"x(?:abc)?y", 0, {"xy", "xabcy"}),  # an optional group: with it and without
        (r"x(?:\d+)?yz", 0, {"yz"}),  # an optional part of unknown text cuts the run
        (r"(?:hello)+", 0, {"hello"}),
        (r"a|\d+", 0, None),  # one branch without a literal
        (r"[A-Z]+_ASSERT\b", 0, {"_assert"}),
        (r"^(?!.*NCCL INFO).*cannot open", 0, {"cannot open"}),
    ],
)
def test_needed_strings(pattern: str, flags: int, want: set[str] | None) -> None:
    got = needed(re.compile(pattern, flags))
    assert got == (None if want is None else frozenset(want))


def test_case_insensitive_rules_are_checked_on_lowered_text() -> None:
    p = re.compile(r"Illegal Instruction", re.I)
    assert may_match(p, "ILLEGAL INSTRUCTION (core dumped)".lower())
    assert not may_match(p, "segmentation fault")


def _corpus_lines() -> list[str]:
    lines: list[str] = []
    for row in FIT.read_text().splitlines():
        if row.strip():
            lines += json.loads(row)["log"].splitlines()
    return lines


def test_no_rule_match_is_skipped_on_the_fit_corpus() -> None:
    patterns = [r.pattern for rs in ALL.values() for r in rs.rules]
    index = LiteralIndex(patterns)
    matched, missed = 0, []
    for line in _corpus_lines():
        text = content(line)
        allowed = set(index.may_match(text.lower()))
        for k, p in enumerate(patterns):
            if p.search(text):
                matched += 1
                if k not in allowed:
                    missed.append((p.pattern[:40], line))
    assert matched > 500
    assert missed == []


def test_every_rule_has_a_literal_to_gate_on() -> None:
    # a rule without one runs on every line; a new rule should not quietly lose the gate
    ungated = [r.name for rs in ALL.values() for r in rs.rules if needed(r.pattern) is None]
    assert ungated == []


def test_a_long_log_of_error_lines_keeps_its_decisive_line() -> None:
    log = noisy_error_log(5000)
    assert len(log.splitlines()) > 5000 and len(log) > 5_000_000
    d = classify(log, engine="vllm")
    assert d.category is Category.OOM_GPU
    assert d.confidence >= 0.7
    assert any("CUDA out of memory" in line for line in d.evidence)


def test_the_decisive_line_may_sit_at_the_start_of_a_noisy_log() -> None:
    head = (
        "ERROR: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
        "address already in use\n"
    )
    log = head + noisy_error_log(1000).split("Traceback")[0]
    d = classify(log, engine="vllm")
    assert d.category is Category.PORT_IN_USE


def test_the_word_index_finds_what_a_substring_test_finds() -> None:
    patterns = [
        re.compile(r"timeout (?:after|expired)", re.I),
        re.compile(r"is not supported with", re.I),
        re.compile(r"ENOMEM", 0),
    ]
    index = LiteralIndex(patterns)
    assert index.may_match("xtimeout after 5s".lower()) == [0]  # a word inside a word
    assert index.may_match("lora is not supported with tp".lower()) == [1]
    assert index.may_match("mmap: enomem".lower()) == [2]
    assert index.may_match("nothing to see") == []


def test_few_rules_run_on_a_long_line_of_error_words() -> None:
    # the work per line is the rules the prefilter lets through: a rule whose literal is
    # a word every error line holds (" failed", "error") runs on every line of a long log
    from bringup.diagnose.classifier import _rule_index
    from bringup.diagnose.ruleset import rulesets_for

    rules, index = _rule_index(rulesets_for(None))
    lines = [content(ln) for ln in noisy_error_log(100).splitlines()[:100]]
    ran = sum(len(index.may_match(t.lower())) for t in lines) / len(lines)
    assert len(rules) > 100
    assert ran < 8  # measured 3.4 of 166 rules


def test_every_pattern_of_every_rule_set_compiles() -> None:
    # rules compile on first use: a bad expression must still fail here, not in a trial
    compiled = [
        p
        for rs in ALL.values()
        for p in (
            *(r.pattern for r in rs.rules),
            *(r.also for r in rs.rules if r.also is not None),
            *(f.exception for f in rs.frame_rules),
            *(f.where for f in rs.frame_rules),
        )
    ]
    assert len(compiled) > 100 and all(isinstance(p, re.Pattern) for p in compiled)
    assert all(r.also is not None for rs in ALL.values() for r in rs.rules if r.also_source)
