"""``python -m bringup.testing.fakeserver [--port N] [--event-rate R] ... | --json CONFIG``.

Prints ``listening http://127.0.0.1:PORT`` once bound, then serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys

from bringup.testing.fakeserver.server import FakeServer, FakeServerConfig


async def _serve(cfg: FakeServerConfig, port: int) -> None:
    server = await FakeServer(cfg).start(port=port)
    print(f"listening {server.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bringup.testing.fakeserver")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--event-rate", type=float, default=50.0, help="events/s per stream")
    p.add_argument("--tokens-per-event", type=int, default=1)
    p.add_argument("--ttft", type=float, default=0.0, help="seconds before the first event")
    p.add_argument("--json", help="a full FakeServerConfig as JSON (overrides the rest)")
    args = p.parse_args(argv)
    if args.json:
        cfg = FakeServerConfig(**json.loads(args.json))
    else:
        cfg = FakeServerConfig(
            event_rate=args.event_rate, tokens_per_event=args.tokens_per_event, ttft_s=args.ttft
        )
    try:
        import uvloop
    except ImportError:
        asyncio.run(_serve(cfg, args.port))
    else:
        uvloop.run(_serve(cfg, args.port))
    sys.exit(0)


if __name__ == "__main__":
    main()
