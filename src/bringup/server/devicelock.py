"""Trials side by side on one device: what they must never do at the same time.

Start-up is most of a trial's time on a GPU engine (imports, weights, compilation, CUDA
graphs), so one trial starts while another is checked and measured. Two things still
happen one at a time, across every bringup sweep on this host that shares the device
(the locks are files, so a vLLM sweep and an SGLang sweep on one GPU agree):

* **measure**: a trial's checks and benchmark own the device. A benchmark beside another
  benchmark measures neither, and the checks' request timeouts are sized from the
  reference's speed measured alone.
* **memory**: an engine's start-up and a teardown each hold it alone. Engines size their
  KV cache from the device's free memory while they start: vLLM 0.26 on an H200 beside
  two other vLLM start-ups measured 1.29 GiB and then -2.38 GiB of KV-cache memory where
  it measures 29.8 GiB alone (an out-of-memory verdict that was the neighbours' doing),
  and it aborts when another process frees memory meanwhile ("Error in memory profiling
  ... other processes sharing the same container release GPU memory"). So one engine
  starts at a time, and a finished trial keeps its memory until no start-up is running.

Written on ``fcntl.flock`` rather than a locking library: its shared and exclusive modes
are the whole mechanism, the kernel drops a dead holder's lock, and acquiring by polling a
non-blocking attempt keeps the wait cancellable (a thread blocked in ``flock`` is not).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

POLL_S = 0.2
Turn = Literal["starting", "measuring", "releasing"]
# each turn: (lock file, shared)
TURNS: dict[str, tuple[str, bool]] = {
    "starting": ("memory", False),
    "measuring": ("measure", False),
    "releasing": ("memory", False),
}


def default_lock_dir() -> Path:
    """Per user, beside bringup's other caches; ``[resources] lock_dir`` widens it."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "bringup" / "locks"


@dataclass
class Held:
    """One acquired lock; ``release`` is idempotent."""

    fd: int | None
    waited_s: float  # 0.0 when nobody else held it

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


@dataclass
class DeviceLocks:
    directory: Path = field(default_factory=default_lock_dir)
    poll_s: float = POLL_S

    async def hold(
        self, name: str, *, shared: bool = False, on_wait: Callable[[], None] | None = None
    ) -> Held:
        """Acquire lock ``name``; ``on_wait`` is called once if someone else holds it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        # one open file per acquisition: flock locks belong to the open file, so two trials
        # of this process exclude each other exactly like two processes do
        fd = os.open(self.directory / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        start = time.monotonic()
        told = False
        try:
            while True:
                try:
                    fcntl.flock(fd, mode)
                    return Held(fd, round(time.monotonic() - start, 3) if told else 0.0)
                except BlockingIOError:
                    if on_wait is not None and not told:
                        told = True
                        on_wait()
                    await asyncio.sleep(self.poll_s)
        except BaseException:
            os.close(fd)
            raise

    async def turn(self, turn: Turn, on_wait: Callable[[], None] | None = None) -> Held:
        """Wait for ``turn`` (see the module docstring for what each excludes)."""
        name, shared = TURNS[turn]
        return await self.hold(name, shared=shared, on_wait=on_wait)
