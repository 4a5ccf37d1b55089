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

Held out (written before any run of the gate against them, of other kinds than the above,
so that ``bench/corruption_eval.py --cases heldout`` judges the gate on faults it was not
tuned on):

- ``crosstalk_when_busy``: a non-streamed completion answered while another is in flight
  gets the choices of the previous completion answered (another request's tokens, as when
  two batch slots are mixed up);
- ``stream_drop``: streamed responses lose every third content event (a streaming path
  that drops chunks; non-streamed answers are intact);
- ``digits_after``: after ``N`` completion requests every ASCII digit in answers' text and
  tokens is replaced by the next one (9 -> 0): fluent text, wrong numbers;
- ``early_stop_after``: after ``N`` completion requests an answer ends after its first
  token (``finish_reason`` "stop"; a stream ends after its first content event).

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
        self.last_choices: object = None  # the previous non-streamed completion's choices

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
                return await self._relay(request, up, completion)
            finally:
                up.release()
        finally:
            self.in_flight -= completion

    def _late(self) -> bool:
        return self.fault.name in ("digits_after", "early_stop_after") and (
            self.completions > self.fault.after
        )

    def _answer(self, payload: bytes, completion: bool) -> bytes:
        """A non-streamed answer, rewritten by the held-out faults."""
        f = self.fault
        if not completion or f.name not in HELD_OUT:
            return payload
        try:
            doc = json.loads(payload)
        except ValueError:
            return payload
        choices = doc.get("choices") if isinstance(doc, dict) else None
        if not isinstance(choices, list):
            return payload
        if f.name == "crosstalk_when_busy":
            previous, self.last_choices = self.last_choices, choices
            if self.in_flight > 1 and previous is not None:
                doc["choices"] = previous
        elif self._late():
            for choice in choices:
                if isinstance(choice, dict):
                    _corrupt_choice(choice, f.name)
        return json.dumps(doc).encode()

    async def _relay(
        self, request: web.Request, up: aiohttp.ClientResponse, completion: bool = False
    ) -> web.StreamResponse:
        if "text/event-stream" not in up.headers.get("Content-Type", ""):
            payload = self._answer(await up.read(), completion)
            return web.Response(status=up.status, body=payload, content_type=up.content_type)
        self.streams += 1
        stalls = self.fault.name == "stall" and self.streams > self.fault.after
        late = self._late()
        resp = web.StreamResponse(status=up.status)
        resp.content_type = "text/event-stream"
        await resp.prepare(request)
        sent = content = 0
        async for line in up.content:
            if stalls and line.startswith(b"data:") and sent >= self.fault.events:
                await asyncio.Event().wait()  # silent until the client gives up
            sent += line.startswith(b"data:")
            doc = _content_event(line) if line.startswith(b"data:") else None
            if doc is not None:
                content += 1
                if self.fault.name == "stream_drop" and content % 3 == 0:
                    continue
                if late and self.fault.name == "digits_after":
                    line = _digits_line(doc)
                if late and self.fault.name == "early_stop_after" and content > 1:
                    await resp.write(b"data: [DONE]\n\n")
                    break
            await resp.write(line)
        await resp.write_eof()
        return resp


HELD_OUT = ("crosstalk_when_busy", "stream_drop", "digits_after", "early_stop_after")
_NEXT_DIGIT = str.maketrans("0123456789", "1234567890")


def _corrupt_choice(choice: dict[str, object], fault: str) -> None:
    """``digits_after`` or ``early_stop_after`` applied to one non-streamed choice."""
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    tokens = content if isinstance(content, list) else []
    if fault == "digits_after":
        for key in ("text",):
            if isinstance(choice.get(key), str):
                choice[key] = str(choice[key]).translate(_NEXT_DIGIT)
        message = choice.get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            message["content"] = message["content"].translate(_NEXT_DIGIT)
        for t in tokens:
            if isinstance(t, dict) and isinstance(t.get("token"), str):
                t["token"] = t["token"].translate(_NEXT_DIGIT)
        return
    # early_stop_after: keep the first token only
    first = tokens[0] if tokens and isinstance(tokens[0], dict) else None
    text = str(first.get("token", "")) if first else str(choice.get("text") or "")[:1]
    if isinstance(choice.get("text"), str):
        choice["text"] = text
    message = choice.get("message")
    if isinstance(message, dict):
        message["content"] = text
    if isinstance(logprobs, dict) and tokens:
        logprobs["content"] = tokens[:1]
    choice["finish_reason"] = "stop"


def _content_event(line: bytes) -> dict[str, object] | None:
    """The decoded event of a ``data:`` line that carries text (None for any other line)."""
    payload = line[5:].strip()
    if payload == b"[DONE]":
        return None
    try:
        doc = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    for choice in doc.get("choices") or ():
        delta = choice.get("delta") or {}
        if choice.get("text") or (isinstance(delta, dict) and delta.get("content")):
            return doc
    return None


def _digits_line(doc: dict[str, object]) -> bytes:
    """An event's ``data:`` line with ``digits_after`` applied to its text."""
    choices = doc.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        if isinstance(choice.get("text"), str):
            choice["text"] = choice["text"].translate(_NEXT_DIGIT)
        delta = choice.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            delta["content"] = delta["content"].translate(_NEXT_DIGIT)
    return b"data: " + json.dumps(doc).encode() + b"\n"


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
