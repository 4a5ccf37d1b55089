"""A fake OpenAI-compatible streaming server for tests and client benchmarks.

In the test's own loop: ``async with FakeServer(FakeServerConfig(event_rate=100)) as s``;
in its own process: ``with FakeServerProcess(cfg) as s``. Both expose ``s.url``.
"""

from bringup.testing.fakeserver.process import FakeServerProcess
from bringup.testing.fakeserver.server import FakeServer, FakeServerConfig, expected_events

__all__ = ["FakeServer", "FakeServerConfig", "FakeServerProcess", "expected_events"]
