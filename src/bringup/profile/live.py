"""Take a torch-profiler trace of one configuration on its running engine.

The configuration is launched like ``bringup launch`` (readiness and checks, then kept
up) with the engine's profiling flags and environment added (:mod:`bringup.engines.
profiling`); a closed loop of ``concurrency`` completions keeps it decoding; after a short
settle the profile is started, held for ``seconds`` and stopped; the engine writes its
trace after the stop returns, so the trace folder is watched until the file stops growing.
The engine is always stopped before returning.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import aiohttp

from bringup.engines.registry import adapters, get_engine
from bringup.errors import BringupError, SpecError
from bringup.executors.local import device_turns
from bringup.http import open_session
from bringup.spec import Config, Spec
from bringup.store import Store
from bringup.sweep import SweepOptions, launch_one, prepare
from bringup.verdict import Status

SETTLE_S = 3.0  # every stream past its prefill before the profile starts
TRACE_WAIT_S = 180.0


async def _load(session: aiohttp.ClientSession, url: str, model: str, stop: asyncio.Event) -> None:
    body = {
        "model": model,
        "prompt": "Tell a long story.",
        "max_tokens": 256,
        "temperature": 0,
        "ignore_eos": True,
    }
    while not stop.is_set():
        with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
            async with session.post(f"{url}/v1/completions", json=body) as r:
                await r.read()


async def _wait_trace(folder: Path, glob: str, since: float) -> Path | None:
    deadline = time.monotonic() + TRACE_WAIT_S
    last: tuple[Path, int] | None = None
    while time.monotonic() < deadline:
        found = [p for p in folder.glob(glob) if p.stat().st_mtime >= since]
        if found:
            newest = max(found, key=lambda p: p.stat().st_mtime)
            size = newest.stat().st_size
            if last == (newest, size) and size > 0:
                return newest
            last = (newest, size)
        await asyncio.sleep(2.0)
    return None


async def capture(
    spec: Spec,
    config: Config,
    out_dir: Path,
    store: Store,
    options: SweepOptions,
    *,
    seconds: float = 2.0,
    concurrency: int = 16,
) -> Path:
    adapter = get_engine(spec.engine.name)
    endpoints = adapter.profiling(str(out_dir.resolve()))
    if endpoints is None:
        able = ", ".join(a.label for a in adapters() if a.profiling(str(out_dir)) is not None)
        raise SpecError(
            f"{spec.engine.name} has no profiling endpoints; `bringup profile` takes traces "
            f"of the engines that have them: {able}."
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = spec.model_copy(deep=True)
    spec.engine.env = {**spec.engine.env, **endpoints.launch_env}
    prep = prepare(spec)
    result, server = await launch_one(prep, store, {**config, **endpoints.launch_flags}, options)
    if server is None or result.status not in (Status.PASSED, Status.UNCHECKED):
        raise BringupError(
            f"the configuration did not come up for profiling ({result.status.value}"
            f"{': ' + result.failure.category.value if result.failure else ''}); "
            f"see {result.log_path}."
        )
    model = adapter.served_model(spec) or ""
    since = time.time()
    # on a shared device (``[resources] shared_device``) the traced window is a measurement:
    # it waits for its turn, and the engine is stopped between other engines' start-ups
    device = device_turns(spec)
    measuring = await device.turn("measuring") if device else None
    try:
        async with open_session(timeout_s=300) as session:
            stop = asyncio.Event()
            load = [
                asyncio.create_task(_load(session, server.url, model, stop))
                for _ in range(concurrency)
            ]
            await asyncio.sleep(SETTLE_S)
            await _call(session, server.url, endpoints.start_request().__dict__)
            await asyncio.sleep(seconds)
            await _call(session, server.url, endpoints.stop_request().__dict__)
            stop.set()
            for task in load:
                task.cancel()
            await asyncio.gather(*load, return_exceptions=True)
        if measuring is not None:
            measuring.release()
        trace = await _wait_trace(Path(endpoints.output_dir), endpoints.trace_glob, since)
    finally:
        if measuring is not None:
            measuring.release()
        if server.process is not None:
            releasing = await device.turn("releasing") if device else None
            try:
                server.process.stop(spec.launch.stop_grace_s)
            finally:
                if releasing is not None:
                    releasing.release()
    if trace is None:
        raise BringupError(f"no trace appeared in {endpoints.output_dir} ({endpoints.note}).")
    return trace


async def _call(session: aiohttp.ClientSession, url: str, call: dict[str, Any]) -> None:
    async with session.request(call["method"], f"{url}{call['path']}", json=call["json_body"]) as r:
        if r.status >= 400:
            text = (await r.text())[:200]
            raise BringupError(f"{call['method']} {call['path']} answered {r.status}: {text}")
