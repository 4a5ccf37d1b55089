"""Is the server that answers the one we launched?

A health loop that reaches somebody else's server on the same port reports "healthy";
after readiness we check that the launched process, or one of its descendants, holds
the listening socket on the port.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil


@dataclass
class IdentityCheck:
    ours: bool
    evidence: str
    owner_pid: int | None = None


def _listening_pids(pid: int, port: int) -> list[int]:
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    found = []
    for proc in tree:
        try:
            conns = proc.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port:
                found.append(proc.pid)
    return found


def _system_listener(port: int) -> int | None:
    try:
        for c in psutil.net_connections(kind="inet"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port:
                return c.pid
    except psutil.AccessDenied:
        return None
    return None


def verify_identity(pid: int, port: int) -> IdentityCheck:
    owners = _listening_pids(pid, port)
    if owners:
        return IdentityCheck(
            True, f"pid {owners[0]} (launched as {pid}) listens on port {port}", owners[0]
        )
    other = _system_listener(port)
    who = f"pid {other}" if other else "a process bringup did not start"
    return IdentityCheck(
        False,
        f"port {port} answers, but the listener is {who}, "
        f"not the launched pid {pid} or its children",
        other,
    )
