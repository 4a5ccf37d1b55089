"""A streamed answer must be the non-streamed answer: one greedy text down either path.

The correct stage reads non-streamed answers and the benchmark times streams, so a
streaming path that drops, repeats or reorders chunks passes both: each looks fine on its
own. Here the free-text prompts the correct stage has just answered greedily are asked
again streamed, with the same length, and the text assembled from the events (by
:func:`bringup.bench.parse_stream`, the benchmark's own reader) must equal the
non-streamed text. Text, never a token or event count: engines legitimately put several
tokens in one event.

Before a mismatch is a verdict the non-streamed answer is asked once more. The stream ran
with the prompt already cached, and where cached and uncached prefill round differently a
near-tied greedy step may part; a second non-streamed request sees the cache as the stream
did. The streamed text must equal one of the two non-streamed answers; when it equals
neither, the streaming path is what differs: ``wrong_answer``, naming the prompt and the
first character offset where the stream parts from the non-streamed answer. A stream that
ends unfinished (neither ``[DONE]`` nor a finish reason) or carries an error event fails
the same way; a request that gets no answer is left to the caller's no-answer verdict
(``error`` and ``error_kind`` on its result).

The streamed request goes through the benchmark's own streaming client and stall
watchdog (:func:`bringup.bench.client.send`), armed from the time the same request took
non-streamed (:func:`bringup.bench.stall.from_requests`) and with the engine's process and
log (``Engine``; else the process listening on the server's loopback port). A stream that
goes silent is judged while it is still open, as in the benchmark: an engine sitting idle
is a ``stall``, one visibly working is ``slow`` (``error_kind``); the correct stage turns
either into a verdict with :func:`bringup.server.progress.judge_silence`, the one rule for
a silence wherever it is seen (a hang of the configuration, or slow and transient). The
stream's deadline comes from the same measurement, not from the client's fixed timeout:
the watchdog's first-token limit plus one gap per token (:meth:`StallWatch.span_s`), so a
stream the watchdog finds alive at every step is never cut short; one still arriving when
even that deadline passes was alive and working all along, and is ``slow``. A request
that gets no answer at all is left to the caller's no-answer verdict (``error`` and
``error_kind`` on its result).

Cost: one streamed request per free-text prompt (and one more only on a mismatch).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bringup.bench.client import send
from bringup.bench.records import RequestRecord, now
from bringup.bench.stall import WATCHDOG_ERRORS, StallWatch, from_requests
from bringup.bench.stream_http import StreamPool
from bringup.checks.garbage import quote
from bringup.checks.load_answers import shared_prefix
from bringup.http import OpenAIClient, RequestError
from bringup.http.openai import completion_body
from bringup.http.session import auth_headers
from bringup.http.urls import root_url
from bringup.server.progress import listener_pid, request_failure_kind


@dataclass
class Asked:
    """A prompt the correct stage answered non-streamed, and how it was asked."""

    name: str
    prompt: str
    answer: str
    max_tokens: int
    elapsed_s: float = 0.0  # how long the non-streamed request took


@dataclass
class StreamOutcome:
    name: str
    prompt: str
    streamed: str
    matched: bool
    evidence: str | None = None  # why it failed (None when it matched)
    note: str | None = None  # matched the re-asked answer, not the first one
    error: str | None = None  # the streamed request got no answer
    error_kind: str | None = None  # request_failure_kind, or the watchdog's stall | slow
    health_status: int | None = None  # what /health answered after the watchdog ended it


def parted(answer: str, streamed: str, prompt: str, name: str) -> str:
    """The evidence line: where the streamed text parts from the non-streamed answer."""
    k = shared_prefix(answer, streamed)
    lo = max(0, k - 12)
    return (
        f"{name}: the streamed answer to prompt {quote(prompt, 60)} differs from the "
        f"non-streamed greedy answer from character {k} on: streamed {quote(streamed[lo:], 60)}"
        f", non-streamed {quote(answer[lo:], 60)} (from character {lo}; streamed "
        f"{len(streamed)} characters, non-streamed {len(answer)})"
    )


@dataclass(frozen=True)
class Engine:
    """The engine process behind the server, where known: the stall watchdog's evidence."""

    pid: int | None = None
    log: str | None = None


def _transport(error: str) -> bool:
    """The request failed on its way (the benchmark client's errors), not in its events."""
    return error in ("connect", "disconnect", "client_error") or error.startswith("http_")


def _kind(error: str) -> str:
    """A streamed request's transport error as :func:`request_failure_kind` names it."""
    if error in WATCHDOG_ERRORS:
        return error
    if error in ("connect", "disconnect"):
        return "connection"
    if error.startswith("http_5"):
        return "server_error"
    return "other"


async def _streamed(
    client: OpenAIClient, asked: Asked, engine: Engine
) -> tuple[RequestRecord, str | None, StallWatch, float]:
    """``asked`` streamed greedily through the benchmark's own client and stall watchdog."""
    pid = engine.pid
    if pid is None:
        pid = await asyncio.to_thread(listener_pid, client.base_url)
    # a watchdog from the same request's non-streamed time, as the benchmark arms one from
    # its idle sentinels: silence far beyond that is judged by what the engine does
    limits = from_requests(asked.elapsed_s, asked.max_tokens, 1)
    watch = replace(limits, pid=pid, log=engine.log)
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        # llama-server closes a connection after its stream without saying so
        "Connection": "close",
        **auth_headers(client.api_key),
    }
    body = completion_body(asked.prompt, asked.max_tokens, 0.0)
    body["stream"] = True
    pool = StreamPool(root_url(client.base_url, "/v1/completions"), headers)
    rec = RequestRecord(index=0, scheduled=now())
    deadline_s = max(client.timeout_s, watch.span_s(asked.max_tokens))
    try:
        detail = await send(pool, json.dumps(body).encode(), rec, deadline_s, watch=watch)
    finally:
        await pool.close()
    return rec, detail, watch, deadline_s


async def check_stream(
    client: OpenAIClient, asked: Asked, engine: Engine | None = None
) -> StreamOutcome:
    """Stream ``asked.prompt`` greedily and compare its text with ``asked.answer``."""
    out = StreamOutcome(asked.name, asked.prompt, "", matched=False)
    rec, detail, watch, deadline_s = await _streamed(client, asked, engine or Engine())
    said = f"{asked.name}: the streamed answer to prompt {quote(asked.prompt, 60)}"
    if rec.error == "timeout":
        # the watchdog judged every silence and found none stuck: the stream was alive
        # and advancing when its deadline, measured and generous, ran out
        rec.error = "slow"
        detail = (
            f"still arriving when its {deadline_s:.1f}s deadline passed (the watchdog's "
            f"limits over {asked.max_tokens} tokens), never silent past the watchdog"
        )
    if rec.error in WATCHDOG_ERRORS:
        # the engine was watched during the silence: judge_silence decides slow or hang
        how = "was too slow" if rec.error == "slow" else "went silent"
        out.error_kind, out.health_status = rec.error, (await client.health())[0]
        out.error = (
            f"{said} {how} after {quote(rec.text, 60)}: {detail} ({watch.describe()}, from "
            f"the {asked.elapsed_s:.2f}s the same request took non-streamed)"
        )
        return out
    if rec.error is not None and _transport(rec.error):
        out.error_kind = _kind(rec.error)
        out.error = f"{said} got no answer ({rec.error}: {detail or 'nothing more'})"
        return out
    out.streamed, broken = rec.text, rec.error
    if broken is not None:
        out.evidence = (
            f"{asked.name}: the streamed answer to prompt {quote(asked.prompt, 60)} ended "
            f"badly ({broken}) after {quote(out.streamed, 60)}; non-streamed "
            f"{quote(asked.answer, 60)}"
        )
        return out
    if out.streamed == asked.answer:
        out.matched = True
        return out
    try:
        again = await client.complete(asked.prompt, max_tokens=asked.max_tokens)
    except RequestError as exc:
        out.error, out.error_kind = str(exc), request_failure_kind(exc)
        return out
    if out.streamed == again.text:
        out.matched = True
        out.note = (
            f"{asked.name}: streamed text equals the re-asked non-streamed answer; the first "
            f"one parted at character {shared_prefix(asked.answer, again.text)} (prompt cache)"
        )
        return out
    out.evidence = parted(asked.answer, out.streamed, asked.prompt, asked.name)
    return out


async def check_streams(
    client: OpenAIClient, asked: Sequence[Asked], engine: Engine | None = None
) -> list[StreamOutcome]:
    """Each prompt in turn; stops at the first that fails or gets no answer."""
    outcomes: list[StreamOutcome] = []
    for a in asked:
        outcomes.append(await check_stream(client, a, engine))
        if not outcomes[-1].matched:
            break
    return outcomes
