"""Results store: SQLite in WAL mode, one row per trial written as it progresses."""

from bringup.store.db import Store, config_key

__all__ = ["Store", "config_key"]
