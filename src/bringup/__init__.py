"""bringup: find, prove and ship the fastest serving configuration that works."""

__version__ = "0.1.0"
