"""Free ports, and who already answers on a port.

Before launching on a pinned port we look, never touch: a connect plus a few GETs tell
who is there (``/health``, ``/props``, ``/v1/models``); nothing is ever signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass, field


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout_s):
        return True
    return False


@dataclass
class Occupant:
    """What answers on a port we did not start anything on."""

    host: str
    port: int
    answers: dict[str, str] = field(default_factory=dict)  # path -> "status: short body"
    model_ids: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if not self.answers:
            return (
                f"something accepts connections on {self.host}:{self.port} but does not speak HTTP"
            )
        parts = [f"{path} -> {ans}" for path, ans in self.answers.items()]
        who = f" serving {', '.join(self.model_ids)}" if self.model_ids else ""
        return f"a server already answers on {self.host}:{self.port}{who} ({'; '.join(parts)})"


async def inspect_occupant(host: str, port: int, timeout_s: float = 2.0) -> Occupant | None:
    """None when nothing listens; otherwise what /health, /props and /v1/models say."""
    if not await asyncio.to_thread(port_open, host, port):
        return None
    occ = Occupant(host, port)
    # the HTTP client loads here, not with the module: a trial on a free port launches
    # its engine first (a fresh Ray worker's first trial is on the clock until then)
    from bringup.http import OpenAIClient
    from bringup.http.openai import json_or_none, model_ids

    async with OpenAIClient(f"http://{host}:{port}", timeout_s=timeout_s) as client:
        for path in ("/health", "/props", "/v1/models"):
            answer = await client.answer("GET", path)
            if not answer.status:
                continue
            occ.answers[path] = (
                f"{answer.status} {answer.body[:120].decode('utf-8', 'replace').strip()}"
            )
            if path == "/v1/models" and answer.status == 200:
                occ.model_ids = model_ids(json_or_none(answer.body))
    return occ
