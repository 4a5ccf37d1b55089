"""A fault layer: a reverse proxy that starts a real engine behind it and breaks it on purpose.

``python -m bringup.testing.faults --port P --fault NAME [--after N] -- ENGINE ARGV...``
starts the engine with ``{upstream}`` in its argv replaced by a free port, listens on
``P`` and forwards every request. The faults are those a short prompt at idle misses:

- ``none``: pass everything through (the layer itself must not look like a fault);
- ``truncate``: prompts longer than ``--keep`` characters lose their beginning, as with
  a context shift or a broken long-context path;
- ``hot_after``: after ``N`` completion requests every request is sampled at
  temperature 1.5 whatever it asked (an engine that degrades after serving a while);
- ``hot_when_busy``: a request that arrives while another is in flight is sampled at
  temperature 1.0 (greedy only at idle);
- ``stall``: every streamed response after the first ``N`` goes silent after ``--events``
  events, connection open and ``/health`` still 200.

It knows nothing of bringup's checks: it rewrites requests and responses, nothing more.
The engine runs in the proxy's process group, so stopping that group stops both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass

import aiohttp
from aiohttp import web


@dataclass
class Fault:
    name: str = "none"
    after: int = 0
    keep: int = 1500
    events: int = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FaultProxy:
    def __init__(self, upstream: str, fault: Fault) -> None:
        self.upstream = upstream
        self.fault = fault
        self.completions = 0
        self.streams = 0
        self.in_flight = 0
        self.session: aiohttp.ClientSession | None = None

    def _rewrite(self, body: dict[str, object]) -> dict[str, object]:
        f = self.fault
        if f.name == "truncate":
            prompt = body.get("prompt")
            if isinstance(prompt, str) and len(prompt) > f.keep:
                body["prompt"] = prompt[-f.keep :]
        elif f.name == "hot_after" and self.completions > f.after:
            body["temperature"] = 1.5
        elif f.name == "hot_when_busy" and self.in_flight > 1:
            body["temperature"] = 1.0
        return body

    async def handle(self, request: web.Request) -> web.StreamResponse:
        assert self.session is not None
        raw = await request.read()
        completion = request.path.endswith("completions") and request.method == "POST"
        body: dict[str, object] | None = None
        if completion:
            self.completions += 1
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        self.in_flight += completion
        try:
            if isinstance(body, dict):
                raw = json.dumps(self._rewrite(body)).encode()
            headers = {
                k: v
                for k, v in request.headers.items()
                if k.lower() not in ("host", "content-length", "transfer-encoding")
            }
            try:
                up = await self.session.request(
                    request.method, self.upstream + request.path_qs, data=raw, headers=headers
                )
            except aiohttp.ClientConnectionError:  # the engine is still starting
                return web.json_response({"status": "loading"}, status=503)
            try:
                return await self._relay(request, up)
            finally:
                up.release()
        finally:
            self.in_flight -= completion

    async def _relay(self, request: web.Request, up: aiohttp.ClientResponse) -> web.StreamResponse:
        if "text/event-stream" not in up.headers.get("Content-Type", ""):
            payload = await up.read()
            return web.Response(status=up.status, body=payload, content_type=up.content_type)
        self.streams += 1
        stalls = self.fault.name == "stall" and self.streams > self.fault.after
        resp = web.StreamResponse(status=up.status)
        resp.content_type = "text/event-stream"
        await resp.prepare(request)
        sent = 0
        async for line in up.content:
            if stalls and line.startswith(b"data:") and sent >= self.fault.events:
                await asyncio.Event().wait()  # silent until the client gives up
            sent += line.startswith(b"data:")
            await resp.write(line)
        await resp.write_eof()
        return resp


async def _serve(port: int, argv: list[str], fault: Fault) -> int:
    up_port = _free_port()
    argv = [a.replace("{upstream}", str(up_port)) for a in argv]
    engine = subprocess.Popen(argv)  # same process group: stopped with the proxy
    proxy = FaultProxy(f"http://127.0.0.1:{up_port}", fault)
    proxy.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
    app = web.Application(client_max_size=64 << 20)
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print(f"fault layer {fault.name} on {port} -> {up_port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    while not stop.is_set() and engine.poll() is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)
    await runner.cleanup()
    await proxy.session.close()
    if engine.poll() is None:
        engine.terminate()
        try:
            engine.wait(10)
        except subprocess.TimeoutExpired:
            engine.kill()
    return engine.returncode or 0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bringup.testing.faults")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--fault", default="none")
    p.add_argument("--after", type=int, default=0)
    p.add_argument("--keep", type=int, default=1500)
    p.add_argument("--events", type=int, default=4)
    p.add_argument("engine", nargs=argparse.REMAINDER)
    ns = p.parse_args(argv)
    engine = [a for a in ns.engine if a != "--"]
    fault = Fault(ns.fault, ns.after, ns.keep, ns.events)
    sys.exit(asyncio.run(_serve(ns.port, engine, fault)))


if __name__ == "__main__":
    main()
