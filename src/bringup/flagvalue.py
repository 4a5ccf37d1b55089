"""The values a configuration gives engine flags: a spec's search space, a trial's flags, a
simulated world's conditions.

Apart from :mod:`bringup.spec` (which re-exports both): a process that only reads
configurations, such as each simulated engine, does without building the spec's models.
"""

from __future__ import annotations

FlagValue = str | int | float | bool
Config = dict[str, FlagValue]
