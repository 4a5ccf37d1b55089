"""Executors: where planned trials run (see :mod:`bringup.executors.base` for the seam).

Nothing is imported here: a Ray worker importing :mod:`bringup.executors.ray_task` runs this
file first, and should not load the local executor, the store and the checks with it.
"""
