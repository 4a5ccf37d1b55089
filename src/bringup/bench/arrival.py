"""When response bytes reached this host: the kernel's receive time on the monotonic clock.

Linux stamps every received segment as it comes off the wire. With ``SO_TIMESTAMPNS`` set,
``recvmsg`` returns the stamp of the last segment the read consumed as ancillary data, so a
read that a busy client makes late still learns when its bytes arrived. Those stamps are
``CLOCK_REALTIME``; :class:`KernelClock` maps them to ``time.monotonic()`` (the clock of
every other time in a benchmark) with an offset measured when it is made: of several
back-to-back readings, the one bracketed most tightly by two monotonic readings.

:func:`enable_kernel_stamps` returns False where the platform offers no such stamps; the
caller then stamps reads with its own clock, and says so.
"""

from __future__ import annotations

import platform
import socket
import struct
import sys
import time

# The option's value is the same on every architecture that uses the generic socket
# constants (x86, ARM, RISC-V, ...); alpha, mips, parisc and sparc number them otherwise,
# so there the client falls back to its own clock rather than guess.
_SO_TIMESTAMPNS_NEW = 64  # struct __kernel_timespec: two signed 64-bit fields (Linux >= 5.1)
_SO_TIMESTAMPNS_OLD = 35  # struct timespec: two longs (64-bit on 64-bit platforms)
_GENERIC = ("x86_64", "amd64", "i686", "i386", "aarch64", "arm64", "riscv64", "ppc64le", "s390x")
ANC_BUFSIZE = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 0
_TIMESPEC = struct.Struct("=qq")


def kernel_stamps_offered() -> bool:
    """Whether this platform can stamp TCP reads with the kernel's receive time."""
    return sys.platform == "linux" and platform.machine().lower() in _GENERIC


def enable_kernel_stamps(sock: socket.socket) -> bool:
    """Ask the kernel to stamp ``sock``'s reads; False when it cannot (use your own clock)."""
    if not kernel_stamps_offered():
        return False
    for option in (_SO_TIMESTAMPNS_NEW, _SO_TIMESTAMPNS_OLD):
        if option == _SO_TIMESTAMPNS_OLD and sys.maxsize <= 2**32:
            break  # a 32-bit timespec: the old option's layout differs, stay on own clock
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, 1)
        except OSError:
            continue
        return True
    return False


class KernelClock:
    """Maps the kernel's receive stamps (realtime) to ``time.monotonic()`` seconds.

    ``offset_ns`` is realtime minus monotonic, from the tightest of ``samples`` brackets;
    ``bracket_ns`` says how tight (the mapping's own uncertainty is half of it). A step of
    the realtime clock during a run (an NTP step, not a slew: both clocks slew together)
    would shift the mapped times; :meth:`arrival` never returns a time after the read.
    """

    def __init__(self, samples: int = 16) -> None:
        best: tuple[int, int] | None = None
        for _ in range(max(1, samples)):
            m0 = time.monotonic_ns()
            real = time.time_ns()
            m1 = time.monotonic_ns()
            if best is None or m1 - m0 < best[0]:
                best = (m1 - m0, real - (m0 + m1) // 2)
        assert best is not None
        self.bracket_ns, self.offset_ns = best

    def arrival(self, stamp: bytes, read_at: float) -> float:
        """The monotonic time of a ``SCM_TIMESTAMPNS`` payload, at latest ``read_at``."""
        sec, nsec = _TIMESPEC.unpack_from(stamp)
        t = (sec * 1_000_000_000 + nsec - self.offset_ns) * 1e-9
        return t if t < read_at else read_at
