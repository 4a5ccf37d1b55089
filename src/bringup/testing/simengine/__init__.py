"""A simulated inference engine driven by a world file.

``python -m bringup.testing.simengine --world FILE [engine flags...]`` behaves like the
engine the world names (health semantics, crashes with real log excerpts, hangs, garbage,
drifting log-probabilities, flag-dependent speed) over the OpenAI-compatible API.
:func:`evaluate` gives the same verdicts analytically, without a process, for planners.

Names load on first use (:mod:`bringup.lazy`): an engine adapter that reads a
:class:`~bringup.testing.simengine.profile.SimProfile` does not load the evaluator and the
diagnosis rules it cites.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bringup.lazy import exports

if TYPE_CHECKING:
    from bringup.testing.simengine.evaluate import SimTrial, evaluate
    from bringup.testing.simengine.generator import random_world
    from bringup.testing.simengine.world import World, load_world, parse_world, shipped_worlds

_HOME = {
    "SimTrial": "bringup.testing.simengine.evaluate",
    "evaluate": "bringup.testing.simengine.evaluate",
    "random_world": "bringup.testing.simengine.generator",
    "World": "bringup.testing.simengine.world",
    "load_world": "bringup.testing.simengine.world",
    "parse_world": "bringup.testing.simengine.world",
    "shipped_worlds": "bringup.testing.simengine.world",
}

__all__ = [
    "SimTrial",
    "World",
    "evaluate",
    "load_world",
    "parse_world",
    "random_world",
    "shipped_worlds",
]

__getattr__ = exports(__name__, _HOME)
