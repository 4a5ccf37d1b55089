"""A real llama-server for tests: started on a free loopback port, ready, then stopped.

For tests that need the engine itself rather than a trial (the check and accuracy
integration tests); readiness is the trial's own (:func:`bringup.server.readiness.wait_ready`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from bringup.engines.registry import get_engine
from bringup.server.ports import free_port
from bringup.server.process import EngineProcess
from bringup.server.readiness import wait_ready


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
        # the trial's own readiness wait: process, log and health watched together
        outcome = await wait_ready(
            proc,
            get_engine("llama.cpp"),
            url,
            start_timeout_s=ready_timeout_s,
            hang_timeout_s=ready_timeout_s,
        )
        if not outcome.ready:
            if proc.poll() is not None:
                tail = proc.log_path.read_text(errors="replace")[-600:]
                raise RuntimeError(f"llama-server exited before ready:\n{tail}")
            raise TimeoutError(f"llama-server did not become ready: {outcome.detail}")
        yield url
    finally:
        proc.stop(grace_s=5)
