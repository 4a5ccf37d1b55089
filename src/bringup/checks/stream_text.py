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

A streamed request is given :data:`~bringup.bench.stall.FACTOR` times the time the same
request took non-streamed (at least :data:`~bringup.bench.stall.FLOOR_S`): a stream that
goes silent is a timeout there, judged by the caller's progress sampler (slow or stuck),
not after the session's whole request timeout.

Cost: one streamed request per free-text prompt (and one more only on a mismatch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bringup.bench.records import RequestRecord, parse_stream
from bringup.bench.stall import FACTOR, FLOOR_S
from bringup.checks.garbage import quote
from bringup.checks.load_answers import shared_prefix
from bringup.http import OpenAIClient, RequestError
from bringup.server.progress import request_failure_kind


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
    error_kind: str | None = None


def assemble(body: bytes) -> tuple[str, str | None]:
    """The text of one SSE completion body, and what was wrong with the stream (or None)."""
    rec = RequestRecord(index=0, scheduled=0.0)
    parse_stream(rec, [(0.0, body)])
    return rec.text, rec.error


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


async def check_stream(client: OpenAIClient, asked: Asked) -> StreamOutcome:
    """Stream ``asked.prompt`` greedily and compare its text with ``asked.answer``."""
    out = StreamOutcome(asked.name, asked.prompt, "", matched=False)
    # the same request streamed takes about as long: a stream silent far beyond that is
    # stuck (the benchmark's stall factor and floor), not worth the session's whole timeout
    limit = max(FLOOR_S, FACTOR * asked.elapsed_s)
    try:
        body = await client.complete_streamed(
            asked.prompt, max_tokens=asked.max_tokens, timeout_s=limit
        )
    except RequestError as exc:
        out.error, out.error_kind = str(exc), request_failure_kind(exc)
        if out.error_kind == "timeout":
            out.error = (
                f"{asked.name}: the streamed answer to prompt {quote(asked.prompt, 60)} did not "
                f"finish within {limit:.1f}s ({FACTOR:g}x the {asked.elapsed_s:.2f}s the same "
                f"request took non-streamed, at least {FLOOR_S:g}s): {exc}"
            )
        return out
    out.streamed, broken = assemble(body)
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


async def check_streams(client: OpenAIClient, asked: Sequence[Asked]) -> list[StreamOutcome]:
    """Each prompt in turn; stops at the first that fails or gets no answer."""
    outcomes: list[StreamOutcome] = []
    for a in asked:
        outcomes.append(await check_stream(client, a))
        if not outcomes[-1].matched:
            break
    return outcomes
