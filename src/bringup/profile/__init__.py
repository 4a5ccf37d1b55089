"""``bringup profile``: where a configuration's decode step goes, against the reference.

- :mod:`.trace` reads a torch-profiler trace into a :class:`~.trace.TraceSummary` (top
  kernels and ops by share of a decode step, step wall time, GPU busy).
- :mod:`.verdict` compares a summary with the reference configuration's and names the
  bottleneck, with the flag that addresses it where one is known.
- :mod:`.llamacpp` compares llama-server's single-stream decode with ``llama-bench`` tg.
- :mod:`.live` launches a trial's configuration with the engine's profiling endpoints and
  takes the trace under a decode load.
"""
