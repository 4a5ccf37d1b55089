"""Garbage detectors: they fire on broken-engine output and stay quiet on language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bringup.checks.garbage import (
    check_likelihood,
    detect_first_token_stops,
    detect_garbage,
)

GARBAGE = [
    ("", "empty"),
    ("   \n\n  ", "empty"),
    ("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", "repeated_token"),
    ("<pad><pad><pad><pad><pad>", "special_tokens"),
    ("<unk> the <unk> of <unk>", "special_tokens"),
    (" the the the the the the the the the the the the", "repeated_token"),
    ("abababababababababababab", "repeated_token"),
    (
        " ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok",
        "repeated_token",
    ),
    (" Ottawa Ottawa Ottawa Ottawa Ottawa Ottawa Ottawa", "repeated_token"),
    ("antiantiantiantiantianti", "repeated_token"),
    (" The answer is 4. Then!!!!!!!!!!!!!!!!!!!!", "repeated_token"),
    ("Hello \ufffd\ufffd\ufffd world \ufffd", "nonprintable"),
    ("text\x00\x01\x02\x03 more", "nonprintable"),
    ("CafÃ© rÃ©sumÃ© naÃ¯ve dÃ©jÃ  vu", "mojibake"),
    ("antically квартира 東京 ประเทศ والله निर्माण", "script_soup"),
    ("upported D F;\n\n D R P23D323D4 PP\nD3D3DDD\n", "letter_junk"),
    (
        " MiniCoverage assurance enslweapons rearrangements Integrced Mess Lennoxfuss Rescue "
        "confusing Wang dualitybustCOUNT conti artis",
        "word_salad",
    ),
]

HEALTHY = [
    " Paris. It is the largest city in France.",
    " 4\n\n2 + 3 = 5\n\n3 + 4 = 7",
    " I am a student. I am a student. I am a student. I am a student. I am a student.",
    "\n\n## Introduction\n\nThe purpose of this document is to describe the",
    " 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20",
    "\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    " le chat. Le chien est sous la table. Le chat est sur la table.",
    " H2O. It is made of two hydrogen atoms and one oxygen atom.",
    " Tokyo (東京), the capital of Japan, and Kyoto (京都).",
    "Chapter 1\n==========\n\nIt was a dark and stormy night.",
    " the USA, the UK and the EU signed the GDPR treaty on 3rd May.",
    " A, B, C, D, E, F, G, H, I, J",
    " Notes from the meeting follow.\n\n--------------------------------",
    " I love you, I love you, I love you, I love you, I love you, I love you",
]


@pytest.mark.parametrize(("text", "detector"), GARBAGE)
def test_fires_on_garbage_and_names_detector(text: str, detector: str) -> None:
    finding = detect_garbage(text)
    assert finding is not None, text
    assert finding.detector == detector
    assert finding.excerpt.startswith(("'", '"'))  # quoted output in the evidence
    assert detector in finding.evidence()


@pytest.mark.parametrize("text", HEALTHY)
def test_quiet_on_healthy_text(text: str) -> None:
    assert detect_garbage(text) is None


def test_one_token_loop_from_tokens() -> None:
    tokens = ["<pad>"] * 3 + ["!"] * 20
    finding = detect_garbage("".join(tokens), tokens)
    assert finding is not None and finding.detector in ("repeated_token", "special_tokens")


def test_trailing_partial_character_is_not_garbage() -> None:
    assert detect_garbage(" The word in Japanese is 日本\ufffd") is None


def test_first_token_stops_needs_all_prompts() -> None:
    all_stop = [("", 1, "stop"), (".", 1, "stop"), ("\n", 0, "stop")]
    finding = detect_first_token_stops(all_stop)
    assert finding is not None and finding.detector == "first_token_stop"
    assert detect_first_token_stops([*all_stop, (" Paris is big", 4, "length")]) is None
    assert detect_first_token_stops([(" 4", 1, "length"), (" 8", 1, "length")]) is None


def test_likelihood_check_margin_and_floor() -> None:
    assert check_likelihood("x", -9.0, -1.0) is not None
    assert check_likelihood("x", -2.5, -0.2) is None  # above the absolute floor
    assert check_likelihood("x", -7.0, -6.0) is None  # within the margin of the reference
    # the corpus's TensorRT-LLM case scored by Gemma: -3.92 against -1.38 for its own answer
    finding = check_likelihood("san, a, b, both, both,", -3.92, -1.38)
    assert finding is not None and "-3.92" in finding.reason and finding.detector == "likelihood"


# Real Gemma 3 270M output on llama-server, made by bench/garbage_eval.py --regenerate.
FIXTURE = Path(__file__).parent / "data" / "gemma_outputs.json"


@pytest.mark.skipif(not FIXTURE.is_file(), reason="no generated fixture")
def test_real_model_outputs() -> None:
    real = json.loads(FIXTURE.read_text(encoding="utf-8"))
    healthy = real["healthy"]
    alarms = [r["text"] for r in healthy if detect_garbage(r["text"], r["tokens"] or None)]
    assert len(healthy) >= 200
    assert len(alarms) / len(healthy) <= 0.01, alarms
    # near-uniform sampling from the real vocabulary: what scrambled logits print
    assert all(detect_garbage(r["text"], r["tokens"] or None) for r in real["junk"])
