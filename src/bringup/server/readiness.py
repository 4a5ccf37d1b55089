"""Wait until a launched engine is ready, or know at once why it never will be.

Three watchers share one loop (50 ms tick): the process (an exit is a verdict within the
tick, never at the timeout), the log (a fatal line ends the wait even if the process
lingers; a silent log for ``hang_timeout_s`` is a hang; the engine's ready line makes the
next health poll happen at once instead of after the backoff), and the health endpoint
(polled with backoff; connection refused and 503 mean "not yet"). Only a healthy answer
makes the engine ready: the ready line alone never does.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from pathlib import Path

from bringup import diagnose
from bringup.engines.base import EngineAdapter, HealthState
from bringup.http import OpenAIClient
from bringup.server.process import EngineProcess, describe_exit
from bringup.verdict import Category, Failure, Stage

TICK_S = 0.05
# the longest wait between health polls: a not-yet-ready poll costs one local request, while
# a ready engine seen a whole second late costs every trial that second (engines that log
# no ready line are noticed only by polling)
MAX_POLL_S = 0.25
FATAL_SETTLE_S = 0.5  # after a fatal line, let the rest of a traceback reach the log


@dataclass
class ReadyOutcome:
    """Ready, or the failure record (the classifier's, rule and flags kept) of why not."""

    ready: bool
    elapsed_s: float
    failure: Failure | None = None
    last_health: str | None = None

    @property
    def category(self) -> Category | None:
        return self.failure.category if self.failure else None

    @property
    def evidence(self) -> list[str]:
        return self.failure.evidence if self.failure else []

    @property
    def detail(self) -> str | None:
        return self.failure.detail if self.failure else None


class LogTail:
    """Incremental reader of a growing log file."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.partial = b""
        self.last_growth = time.monotonic()

    def read_new_lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        if not chunk:
            return []
        self.offset += len(chunk)
        self.last_growth = time.monotonic()
        data = self.partial + chunk
        *lines, self.partial = data.split(b"\n")
        return [ln.decode("utf-8", "replace").rstrip("\r") for ln in lines]

    def text(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""


def last_lines(text: str, n: int = 5) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()][-n:]


async def wait_ready(
    proc: EngineProcess,
    adapter: EngineAdapter,
    base_url: str,
    *,
    start_timeout_s: float,
    hang_timeout_s: float,
    health_path: str | None = None,
    ready_pattern: str | None = None,
) -> ReadyOutcome:
    start = time.monotonic()
    ready_line = re.compile(ready_pattern) if ready_pattern else None
    tail = LogTail(proc.log_path)
    path = health_path or adapter.health_path
    backoff, next_poll = 0.05, start
    last_health: str | None = None

    def failed(category: Category | None = None, detail: str | None = None) -> ReadyOutcome:
        text = tail.text()
        diag = diagnose.classify(
            text, engine=adapter.name, exit_code=proc.returncode, stage=Stage.READY
        )
        failure = diag.to_failure(Stage.READY, detail)
        failure.evidence = failure.evidence or last_lines(text)
        if category is not None:
            failure.category = category
        return ReadyOutcome(False, time.monotonic() - start, failure, last_health)

    health = OpenAIClient(base_url, timeout_s=adapter.health_timeout_s, connect_timeout_s=1.0)
    async with health:
        while True:
            now = time.monotonic()
            if proc.poll() is not None:
                tail.read_new_lines()
                return failed(detail=f"process {describe_exit(proc.returncode)} before ready")
            for line in tail.read_new_lines():
                if adapter.is_fatal(line):
                    settle = time.monotonic() + FATAL_SETTLE_S
                    while time.monotonic() < settle and proc.poll() is None:
                        await asyncio.sleep(TICK_S)
                    tail.read_new_lines()
                    return failed(detail=f"fatal log line while starting: {line.strip()}")
                if ready_line is not None and ready_line.search(line):
                    next_poll = now
            if now - start > start_timeout_s:
                detail = f"not ready after {start_timeout_s:.0f} s"
                return _hang(tail, adapter, start, last_health, detail)
            if now - tail.last_growth > hang_timeout_s:
                detail = f"no log output for {hang_timeout_s:.0f} s"
                return _hang(tail, adapter, start, last_health, detail)
            if now >= next_poll:
                state, last_health = await _poll(health, path, adapter)
                if state is HealthState.READY:
                    return ReadyOutcome(True, time.monotonic() - start, last_health=last_health)
                backoff = min(backoff * 1.5, MAX_POLL_S)
                next_poll = time.monotonic() + backoff
            await asyncio.sleep(TICK_S)


def _hang(
    tail: LogTail, adapter: EngineAdapter, start: float, last_health: str | None, detail: str
) -> ReadyOutcome:
    diag = diagnose.diagnose_hang(tail.text(), engine=adapter.name)
    failure = diag.to_failure(Stage.READY, detail)
    failure.category = Category.STARTUP_TIMEOUT_OR_HANG
    return ReadyOutcome(False, time.monotonic() - start, failure, last_health)


async def _poll(client: OpenAIClient, path: str, adapter: EngineAdapter) -> tuple[HealthState, str]:
    answer = await client.answer("GET", path)
    if answer.status:
        return adapter.health_state(answer.status, answer.body), f"{answer.status}"
    # no HTTP answer: refused means nothing listens yet, a timeout that it is still busy
    state = HealthState.LOADING if answer.why == "timeout" else HealthState.NOT_LISTENING
    return state, answer.why
