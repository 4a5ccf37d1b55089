"""The simulated engine's text: bringup's built-in known answers come out right, and a
drift moves log-probabilities and the free continuation but not a known answer."""

from __future__ import annotations

import pytest

from bringup.checks.known_answers import KnownAnswer, builtin_suite
from bringup.testing.simengine.text import answer_text, continuation, token_logprob
from bringup.testing.simengine.world import World, parse_world

WORLD = """
[world]
name = "text"
[space]
"--kv" = ["bf16", "fp8"]
[answers]
"capital of Peru" = " Lima."
"""


@pytest.fixture
def world() -> World:
    return parse_world(WORLD)


def test_every_builtin_known_answer_is_answered_right(world: World) -> None:
    suite, _ = builtin_suite()
    assert suite
    for ka in suite:
        out = "".join(continuation(ka.prompt, ka.max_tokens, world))
        assert ka.judge(out), (ka.name, ka.expectation(), out)


def test_a_drift_keeps_known_answers_and_moves_the_rest(world: World) -> None:
    suite, prompts = builtin_suite()
    for ka in suite:
        out = "".join(continuation(ka.prompt, ka.max_tokens, world, agreement=0.0))
        assert ka.judge(out), (ka.name, out)
    free = prompts[0]
    same = continuation(free, 32, world)
    drifted = continuation(free, 32, world, agreement=0.5)
    changed = sum(a != b for a, b in zip(same, drifted, strict=True))
    assert 4 <= changed <= 28, changed  # about half of them
    moved = [abs(token_logprob(free, i, 0.05) - token_logprob(free, i)) for i in range(32)]
    assert all(m == pytest.approx(0.05) for m in moved)


def test_world_answers_come_first(world: World) -> None:
    out = continuation("The capital of Peru is", 3, world)
    assert "".join(out).startswith(" Lima.")


@pytest.mark.parametrize(
    ("entry", "text"),
    [
        ({"regex": "^\\s*Paris\\b"}, " Paris"),
        ({"regex": "(?i)^\\s*6,\\s*7"}, " 6, 7"),
        ({"regex": "^\\s*3\\.14\\b"}, " 3.14"),
        ({"numeric": 40}, " 40"),
        ({"numeric": 2.5}, " 2.5"),
        ({"exact": "Tokyo"}, " Tokyo"),
        ({"contains": "blue"}, " blue"),
        ({"regex": "^\\s*(?:Paris|Lyon)"}, None),  # not a literal: no answer read off it
    ],
)
def test_answer_text_meets_the_expectation(entry: dict[str, object], text: str | None) -> None:
    ka = KnownAnswer.from_dict({"prompt": "p", **entry})
    assert answer_text(ka) == text
    if text is not None:
        assert ka.judge(text)
