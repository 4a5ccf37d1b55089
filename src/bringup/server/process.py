"""Spawn an engine in its own process group with its output in a log file; stop it.

bringup only ever signals process groups it created here: each :class:`EngineProcess`
remembers the group id of the session it started, and teardown signals that group only.
On Linux the engine also gets a parent-death signal (``PR_SET_PDEATHSIG``, SIGKILL): if
bringup itself is SIGKILLed, no cleanup of its own can run, and the engine must not
outlive it. The signal fires when the *thread* that spawned it ends, so engines are
spawned from the thread that also stops them (the event loop's).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

_LIVE: dict[int, EngineProcess] = {}
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks Linux to SIGKILL the child when bringup dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork, not in the child
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # bringup died between fork and prctl
            os._exit(1)

    return preexec


class EngineProcess:
    """One engine process: started with ``start_new_session`` so it leads its own group."""

    def __init__(self, argv: list[str], log_path: Path, env: dict[str, str] | None = None):
        self.argv = argv
        self.env = dict(env or {})  # what bringup added to the environment (for redaction)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab", buffering=0)  # noqa: SIM115 - closed in stop()
        full_env = os.environ.copy()
        if env:
            full_env.update(env)
        self.started_at = time.monotonic()
        try:
            self.popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=full_env,
                start_new_session=True,
                preexec_fn=_die_with_parent(),  # prctl only: takes no lock in the child
            )
        except OSError:
            self._log.close()
            raise
        self.pid = self.popen.pid
        self.pgid = self.pid  # a new session's leader is its own group leader
        _LIVE[self.pid] = self

    def poll(self) -> int | None:
        return self.popen.poll()

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def running(self) -> bool:
        """The leader or any process of its group is still alive (and may hold memory)."""
        return self.popen.poll() is None or self._group_alive()

    def stop(self, grace_s: float = 10.0) -> int | None:
        """SIGTERM the group, SIGKILL after ``grace_s``; returns the leader's exit status."""
        try:
            if self.popen.poll() is None or self._group_alive():
                self._signal_group(signal.SIGTERM)
                deadline = time.monotonic() + grace_s
                while time.monotonic() < deadline:
                    self.popen.poll()
                    if self.popen.returncode is not None and not self._group_alive():
                        break
                    time.sleep(0.05)
                if self._group_alive():
                    self._signal_group(signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(timeout=5)
        finally:
            _LIVE.pop(self.pid, None)
            with contextlib.suppress(OSError):
                self._log.close()
        return self.popen.returncode


def stop_all(grace_s: float = 3.0) -> None:
    """Stop every engine this process started (used on Ctrl-C and at exit)."""
    for proc in list(_LIVE.values()):
        proc.stop(grace_s)


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exited with code {code}"
