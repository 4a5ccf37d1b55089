"""Results store: SQLite in WAL mode, one row per trial written as it progresses."""

from bringup.store.db import Store, launch_key
from bringup.store.rows import TrialRow

__all__ = ["Store", "TrialRow", "launch_key"]
