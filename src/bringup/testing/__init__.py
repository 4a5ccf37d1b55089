"""Fakes shipped with bringup, so that users' tests and its own use the same ones."""
