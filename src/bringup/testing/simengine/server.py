"""The simulated engine's process: start-up, failure and the OpenAI-compatible API.

One :class:`SimEngine` per process. It logs like the imitated engine, follows its health
semantics as the engine's :class:`~bringup.testing.simengine.profile.SimProfile` says
(e.g. connection refused, then 503 while warming up, then 200), then crashes, hangs or
serves as the world's first matching outcome says. Delays of start-up and crashes are the
world's seconds divided by ``speed``; token timing is real (first token after the world's
TTFT, then the throughput shared among active requests).

Load: a request that arrives while it makes ``min_concurrency`` or more in flight meets
the rules that hold under load: the engine prints the rule's log and exits with its code
(``crash``, e.g. an out-of-memory under a full batch), the request never gets a token
while ``/health`` stays 200 (``hang``: a stall), it answers garbage or the rule's wrong
text, or it fails with HTTP 500 (``load_errors``). Throughput and TTFT use the
interactions that hold at the number of requests in flight.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from typing import Any, NoReturn

from aiohttp import web

from bringup.testing.simengine.evaluate import outcome_log
from bringup.testing.simengine.profile import profile_for
from bringup.testing.simengine.text import continuation, token_logprob
from bringup.testing.simengine.world import Outcome, World


class SimEngine:
    def __init__(
        self,
        world: World,
        config: dict[str, Any],
        host: str,
        port: int,
        model: str,
        speed: float = 1.0,
        launched: float | None = None,
    ) -> None:
        self.world = world
        self.config = config
        self.host, self.port = host, port
        self.model = model
        self.speed = max(speed, 1e-6)
        self.outcome: Outcome | None = world.first_outcome(config)
        self.profile = profile_for(world.world.engine)
        self.ready = False
        self.active = 0
        self.served = 0
        # simulated time counts from the launch (``launched``: the process's start), as a
        # real engine's start-up does: the simulator's own imports are no part of the
        # simulated start-up, so a busy CPU does not lengthen a fixed simulated duration
        self.started = time.time() if launched is None else min(launched, time.time())
        self._runner: web.AppRunner | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    def log(self, line: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        print(self.profile.log_format.format(stamp=stamp, line=line), file=sys.stderr, flush=True)

    async def _sleep_until(self, sim_s: float) -> None:
        delay = self.started + sim_s / self.speed - time.time()
        if delay > 0:
            await asyncio.sleep(delay)

    async def run(self) -> int:
        """Run until a simulated crash (its exit code) or until cancelled (0)."""
        w, t = self.world, self.world.timing
        engine = w.world.engine
        self.log(f"Simulated {engine} {w.world.engine_version} on {w.world.hardware}")
        self.log(f"world: {w.world.name}")
        self.log(f"server_args: model={self.model!r} flags={json.dumps(self.config, default=str)}")
        crash_at = self.outcome.after_s if self.outcome and self.outcome.kind == "crash" else None
        listen_at = {
            "start": 0.0,
            "listen_s": t.listen_s if t.listen_s is not None else t.startup_s * 0.9,
        }
        listen_s = listen_at.get(self.profile.listen, t.startup_s)
        steps = sorted(
            [(listen_s, "listen"), (t.startup_s * 0.3, "load"), (t.startup_s, "ready")]
            + ([(crash_at, "crash")] if crash_at is not None else [])
        )
        for at, step in steps:
            if self.outcome and self.outcome.kind == "hang" and step == "ready":
                for line in outcome_log(self.outcome).splitlines():
                    self.log(line)
                await asyncio.Event().wait()  # never ready; stopped by a signal
            await self._sleep_until(at)
            if step == "crash" and self.outcome is not None:
                await self._crash(self.outcome)
                return self.outcome.exit_code
            if step == "listen":
                await self._listen()
            elif step == "load":
                self.log("Load weight end. avail mem=21.40 GB, mem usage=71.62 GB.")
            elif step == "ready":
                if self._runner is None:
                    await self._listen()
                self.ready = True
                self._log_ready()
        await asyncio.Event().wait()
        return 0

    async def _crash(self, outcome: Outcome) -> None:
        for line in outcome_log(outcome).splitlines():
            print(line, file=sys.stderr, flush=True)
        await self.close()

    def _log_ready(self) -> None:
        url = f"http://{self.host}:{self.port}"
        for line in self.profile.ready_lines:
            self.log(line.format(url=url))

    async def _listen(self) -> None:
        app = web.Application()
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.completions)
        app.router.add_get("/model_info", self.model_info)
        app.router.add_get("/server_info", self.server_info)
        app.router.add_get("/version", self.version)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- endpoints ---------------------------------------------------------------------

    def _not_ready(self) -> web.Response:
        if self.profile.loading_body is not None:
            return web.json_response(self.profile.loading_body, status=503)
        return web.Response(status=503)

    async def health(self, request: web.Request) -> web.Response:
        if not self.ready:
            return self._not_ready()
        if self.profile.ready_body is not None:
            return web.json_response(self.profile.ready_body)
        return web.Response(status=200)

    async def models(self, request: web.Request) -> web.Response:
        if not self.ready:
            return self._not_ready()
        entry = {
            "id": self.model,
            "object": "model",
            "owned_by": self.world.world.engine,
            "root": self.model,
        }
        return web.json_response({"object": "list", "data": [entry]})

    async def model_info(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"model_path": self.model, "served_model_name": self.model, "is_generation": True}
        )

    async def server_info(self, request: web.Request) -> web.Response:
        info: dict[str, Any] = {k.lstrip("-").replace("-", "_"): v for k, v in self.config.items()}
        info.update(version=self.world.world.engine_version, model_path=self.model)
        return web.json_response(info)

    async def version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": self.world.world.engine_version})

    async def completions(self, request: web.Request) -> web.StreamResponse:
        if not self.ready:
            return self._not_ready()
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"error": {"message": "invalid JSON body"}}, status=400)
        chat = request.path.endswith("/chat/completions")
        prompt = _prompt_of(body, chat)
        n = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        self.served += 1
        out = self._rule(self.active + 1)
        if (
            out is not None
            and out.kind == "load_errors"
            and self.active >= 1
            and _unit(f"{prompt}|{self.served}") < out.error_rate
        ):
            return web.json_response({"error": {"message": "Internal server error"}}, status=500)
        if out is not None and out.min_concurrency is not None and out.kind == "crash":
            self._crash_under_load(out)
        tokens = self._tokens(prompt, n, out)
        want_lp = body.get("logprobs")
        self.active += 1
        try:
            if out is not None and out.min_concurrency is not None and out.kind == "hang":
                await asyncio.Event().wait()  # a stall: no token ever, /health still 200
            if body.get("stream"):
                return await self._stream(request, prompt, tokens, want_lp, chat, body)
            await asyncio.sleep(self._ttft() + self._itl() * max(0, len(tokens) - 1))
            return web.json_response(self._response(prompt, tokens, want_lp, chat))
        finally:
            self.active -= 1

    # ---- load ----------------------------------------------------------------------------

    def _rule(self, streams: int) -> Outcome | None:
        """The rule deciding a request that makes ``streams`` in flight (the first that
        holds at that load)."""
        return self.world.first_outcome(self.config, streams)

    def _crash_under_load(self, outcome: Outcome) -> NoReturn:
        """Print the rule's log and die with its code at once, as an engine killed by its
        own error does: every open connection goes with the process."""
        self.log(f"Decode batch. #running-req: {self.active + 1}")
        for line in outcome_log(outcome).splitlines():
            print(line, file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(outcome.exit_code)

    # ---- generation --------------------------------------------------------------------

    def _tokens(self, prompt: str, n: int, out: Outcome | None) -> list[str]:
        if out and out.kind in ("garbage", "wrong_answer"):
            text = out.text if out.kind == "wrong_answer" else "!"
            pieces = [text] if out.kind == "wrong_answer" else ["!"] * n
            return pieces[:n]
        agreement = out.token_agreement if out and out.kind == "drift" else 1.0
        return continuation(prompt, n, self.world, agreement)

    def _ttft(self) -> float:
        return self.world.true_ttft_ms(self.config, max(1, self.active)) / 1000.0

    def _itl(self) -> float:
        streams = max(1, self.active)
        return streams / self.world.true_output_tok_s(self.config, streams)

    def _logprobs(self, prompt: str, tokens: list[str]) -> dict[str, Any]:
        drift = self.outcome.logprob_drift if self.outcome and self.outcome.kind == "drift" else 0.0
        lps = [token_logprob(prompt, i, drift) for i in range(len(tokens))]
        offsets, pos = [], len(prompt)
        for tok in tokens:
            offsets.append(pos)
            pos += len(tok)
        return {
            "tokens": tokens,
            "token_logprobs": lps,
            "top_logprobs": [{tok: lp} for tok, lp in zip(tokens, lps, strict=True)],
            "text_offset": offsets,
        }

    def _response(self, prompt: str, tokens: list[str], want_lp: Any, chat: bool) -> dict[str, Any]:
        text = "".join(tokens)
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
            choice["logprobs"] = self._logprobs(prompt, tokens) if want_lp is not None else None
        return {
            "id": f"cmpl-sim-{self.served}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [choice],
            "usage": _usage(prompt, tokens),
        }

    async def _stream(
        self,
        request: web.Request,
        prompt: str,
        tokens: list[str],
        want_lp: Any,
        chat: bool,
        body: dict[str, Any],
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        obj = "chat.completion.chunk" if chat else "text_completion"
        base = {
            "id": f"cmpl-sim-{self.served}",
            "object": obj,
            "created": int(time.time()),
            "model": self.model,
        }
        lp = self._logprobs(prompt, tokens) if want_lp is not None and not chat else None
        await asyncio.sleep(self._ttft())
        for i, tok in enumerate(tokens):
            if i:
                await asyncio.sleep(self._itl())
            last = i == len(tokens) - 1
            choice: dict[str, Any] = {"index": 0, "finish_reason": "length" if last else None}
            if chat:
                choice["delta"] = {"content": tok}
            else:
                choice["text"] = tok
                choice["logprobs"] = {k: [v[i]] for k, v in lp.items()} if lp is not None else None
            await resp.write(_sse({**base, "choices": [choice]}))
        if (body.get("stream_options") or {}).get("include_usage"):
            await resp.write(_sse({**base, "choices": [], "usage": _usage(prompt, tokens)}))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _usage(prompt: str, tokens: list[str]) -> dict[str, int]:
    p = max(1, len(prompt.split()))
    return {"prompt_tokens": p, "completion_tokens": len(tokens), "total_tokens": p + len(tokens)}


def _prompt_of(body: dict[str, Any], chat: bool) -> str:
    if chat:
        msgs = body.get("messages") or []
        return str(msgs[-1].get("content", "")) if msgs else ""
    prompt = body.get("prompt", "")
    if isinstance(prompt, list):
        return str(prompt[0]) if prompt else ""
    return str(prompt)


def _unit(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
