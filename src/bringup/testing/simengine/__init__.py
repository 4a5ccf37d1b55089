"""A simulated inference engine driven by a world file.

``python -m bringup.testing.simengine --world FILE [engine flags...]`` behaves like the
engine the world names (health semantics, crashes with real log excerpts, hangs, garbage,
drifting log-probabilities, flag-dependent speed) over the OpenAI-compatible API.
:func:`evaluate` gives the same verdicts analytically, without a process, for planners.
"""

from bringup.testing.simengine.evaluate import SimTrial, evaluate
from bringup.testing.simengine.generator import random_world
from bringup.testing.simengine.world import World, load_world, parse_world, shipped_worlds

__all__ = [
    "SimTrial",
    "World",
    "evaluate",
    "load_world",
    "parse_world",
    "random_world",
    "shipped_worlds",
]
