"""A real llama-server for tests: started on a free loopback port, ready, then stopped.

For tests that need the engine itself rather than a trial (the check and accuracy
integration tests); the trial runner has its own readiness logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

from bringup.client import OpenAIClient
from bringup.server.ports import free_port
from bringup.server.process import EngineProcess


@contextlib.asynccontextmanager
async def serve_llama(
    binary: str, model: str, log_dir: Path, *flags: str, ready_timeout_s: float = 90.0
) -> AsyncIterator[str]:
    """Yield the base URL of a ready llama-server started with ``flags``; stop its group after."""
    port = free_port()
    argv = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "2048"]
    proc = EngineProcess([*argv, "-t", "2", "--no-warmup", *flags], log_dir / f"llama-{port}.log")
    url = f"http://127.0.0.1:{port}"
    try:
        async with OpenAIClient(url, timeout_s=5) as client:
            deadline = time.monotonic() + ready_timeout_s
            while (await client.health())[0] != 200:
                if proc.poll() is not None:
                    tail = proc.log_path.read_text(errors="replace")[-600:]
                    raise RuntimeError(f"llama-server exited before ready:\n{tail}")
                if time.monotonic() > deadline:
                    raise TimeoutError("llama-server did not become ready")
                await asyncio.sleep(0.2)
        yield url
    finally:
        proc.stop(grace_s=5)
