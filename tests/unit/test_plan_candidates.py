"""``[[candidates]]`` flag sets and ``[plan].exclude``, honoured by every planner."""

from __future__ import annotations

import pytest

from bringup.errors import SpecError
from bringup.plan import PLANNERS, PlannedTrial, SweepPlanner, make_planner
from bringup.plan.space import changed_flags, flags_key
from bringup.spec import parse_spec
from bringup.verdict import Stage, Status, TrialResult

HEAD = """
[engine]
name = "llama.cpp"
[model]
path = "m.gguf"
"""

CANDIDATES_ONLY = (
    HEAD
    + """
[reference]
"--flash-attn" = "off"
"--cache-type-k" = "f16"
[[candidates]]
"--flash-attn" = "off"
"--cache-type-k" = "f16"
[[candidates]]
"--flash-attn" = "on"
"--cache-type-k" = "q8_0"
"--cache-type-v" = "q8_0"
[[candidates]]
"--flash-attn" = "on"
"--parallel" = 4
"""
)

AXES_AND_CANDIDATES = (
    HEAD
    + """
[space]
"--flash-attn" = ["off", "on"]
"--cache-type-k" = ["f16", "q8_0"]
[[candidates]]
"--flash-attn" = "on"
"--cache-type-k" = "q8_0"
[[candidates]]
"--flash-attn" = "on"
"--cache-type-k" = "q4_0"
"--cache-type-v" = "q4_0"
[plan]
exclude = [{"--cache-type-k" = "q8_0", "--flash-attn" = "off"}, {"--cache-type-v" = "q4_0"}]
"""
)


def drive(planner: SweepPlanner) -> list[PlannedTrial]:
    """Every trial passes; returns what the planner launched, in order."""
    seen: list[PlannedTrial] = []
    gen = planner.plan()
    try:
        item = next(gen)
        while True:
            seen.append(item)
            r = TrialResult(trial_id=f"t{len(seen)}", flags=dict(item.config))
            r.status, r.stage = Status.PASSED, Stage.PASSED
            r.metrics = {"output_tok_s": 100.0 + len(seen)}
            item = gen.send(r)
    except StopIteration:
        pass
    return seen


def test_candidates_alone_are_the_configurations() -> None:
    spec = parse_spec(CANDIDATES_ONLY)
    configs = spec.configs()
    assert configs == [dict(c) for c in spec.candidates]
    assert spec.reference_config() == {"--flash-attn": "off", "--cache-type-k": "f16"}
    assert spec.axes() == {
        "--flash-attn": ["off", "on"],
        "--cache-type-k": ["f16", "q8_0"],
        "--cache-type-v": ["q8_0"],
        "--parallel": [4],
    }


def test_candidates_beside_axes_add_only_new_sets() -> None:
    spec = parse_spec(AXES_AND_CANDIDATES)
    keys = [flags_key(c) for c in spec.configs()]
    assert len(keys) == 5  # 4 of the grid; one candidate repeats a grid point
    assert len(set(keys)) == 5
    assert spec.configs()[-1] == {
        "--flash-attn": "on",
        "--cache-type-k": "q4_0",
        "--cache-type-v": "q4_0",
    }


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_every_planner_runs_exactly_the_listed_candidates(name: str) -> None:
    spec = parse_spec(CANDIDATES_ONLY)
    planner = make_planner(spec, name)
    seen = drive(planner)
    first_looks = {flags_key(t.config) for t in seen if t.purpose in ("explore", "reference")}
    assert first_looks == {flags_key(c) for c in spec.candidates}
    assert not planner.pruned
    assert planner.planned_total()[0] == 3


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_every_planner_honours_exclude(name: str) -> None:
    spec = parse_spec(AXES_AND_CANDIDATES)
    planner = make_planner(spec, name)
    seen = drive(planner)
    launched = {flags_key(t.config) for t in seen}
    banned_grid = {"--flash-attn": "off", "--cache-type-k": "q8_0"}
    banned_cand = {"--flash-attn": "on", "--cache-type-k": "q4_0", "--cache-type-v": "q4_0"}
    assert flags_key(banned_grid) not in launched
    assert flags_key(banned_cand) not in launched
    assert len(launched) == 3
    excluded = {flags_key(p.config) for p in planner.pruned if p.reason.startswith("excluded")}
    assert excluded == {flags_key(banned_grid), flags_key(banned_cand)}
    assert planner.planned_total()[0] == 3


def test_candidate_flags_must_be_engine_flags() -> None:
    with pytest.raises(SpecError, match=r"candidates.*must be an engine flag"):
        parse_spec(HEAD + '[[candidates]]\n"flash-attn" = "on"\n')


def test_secret_candidate_values_are_masked_in_the_stored_spec() -> None:
    spec = parse_spec(HEAD + '[[candidates]]\n"--api-key" = "sk-verysecret123"\n')
    assert "sk-verysecret123" not in spec.public_json()
    assert "sk-verysecret123" in spec.secret_values()


def test_changed_flags_compares_command_line_text_on_both_sides() -> None:
    ref = {"--max-num-seqs": 64, "--enforce-eager": True, "--seed": 0}
    # a config read back from the store carries JSON text and numbers
    assert (
        changed_flags({"--max-num-seqs": "64", "--enforce-eager": "true", "--seed": 0}, ref)
        == set()
    )
    assert changed_flags({"--max-num-seqs": 64.0, "--enforce-eager": True, "--seed": 1}, ref) == {
        "--seed"
    }
    # a flag only one side sets is a change, whichever side it is
    assert changed_flags({"--max-num-seqs": 64, "--enforce-eager": True}, ref) == {"--seed"}
    assert changed_flags({**ref, "--x": 1}, ref) == {"--x"}
