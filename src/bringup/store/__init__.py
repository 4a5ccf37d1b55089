"""Results store: SQLite in WAL mode, one row per trial written as it progresses."""

from bringup.store.db import Store, config_key
from bringup.store.rows import TrialRow

__all__ = ["Store", "TrialRow", "config_key"]
