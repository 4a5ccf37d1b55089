"""The SSE parse and per-token timing of one request record."""

from __future__ import annotations

import orjson
import pytest

from bringup.bench.records import RequestRecord, _spread, parse_stream


def _event(obj: dict[str, object]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _text(text: str, finish: str | None = None, **extra: object) -> bytes:
    return _event({"choices": [{"index": 0, "text": text, "finish_reason": finish}], **extra})


def _record() -> RequestRecord:
    rec = RequestRecord(index=0, scheduled=0.0)
    rec.sent = 10.0
    return rec


def test_one_token_per_event_with_usage_on_the_last_chunk() -> None:
    reads = [
        (10.1, _text(" a")),
        (10.2, _text(" b")),
        (10.4, _text(" c")),
        (
            10.5,
            _text("", "length", usage={"completion_tokens": 3, "prompt_tokens": 7})
            + b"data: [DONE]\n\n",
        ),
    ]
    rec = _record()
    parse_stream(rec, reads)
    assert rec.ok
    assert rec.output_tokens == 3 and rec.prompt_tokens == 7 and rec.usage_reported
    assert rec.text == " a b c"
    assert rec.ttft == pytest.approx(0.1)
    assert rec.itls() == pytest.approx([0.1, 0.2])
    assert rec.tpot() == pytest.approx(0.15)
    assert rec.finish_reason == "length"


def test_chunk_of_k_tokens_counts_as_k_inter_token_latencies() -> None:
    # usage says 7 tokens over 3 events: the excess is spread by text length
    reads = [
        (10.1, _text(" one")),
        (10.3, _text(" two three four")),  # about 3 tokens, 0.2 s after the previous event
        (10.4, _text(" five six")),
        (10.4, _text("", "stop") + _event({"choices": [], "usage": {"completion_tokens": 7}})),
        (10.4, b"data: [DONE]\n\n"),
    ]
    rec = _record()
    parse_stream(rec, reads)
    assert rec.event_tokens == [2, 3, 2]
    assert sum(rec.event_tokens) == 7
    itls = rec.itls()
    assert len(itls) == 7 - rec.event_tokens[0]
    # the 0.2 s gap is shared by the tokens of the second event, not charged to one token
    k = rec.event_tokens[1]
    assert itls[:k] == pytest.approx([0.2 / k] * k)
    assert sum(itls) == pytest.approx(0.3)


def test_event_split_across_reads_is_timed_by_the_read_that_completes_it() -> None:
    whole = _text(" hello")
    reads = [
        (10.1, whole[:9]),
        (10.3, whole[9:]),
        (10.4, _text("", "length") + b"data: [DONE]\n\n"),
    ]
    rec = _record()
    parse_stream(rec, reads)
    assert rec.event_times == [10.3]
    assert rec.ttft == pytest.approx(0.3)


def test_events_in_one_read_share_its_timestamp_and_no_itl_between_them() -> None:
    reads = [(10.2, _text(" a") + _text(" b") + _text(" c", "length") + b"data: [DONE]\n\n")]
    rec = _record()
    parse_stream(rec, reads)
    assert rec.event_times == [10.2, 10.2, 10.2]
    assert rec.coalesced() == 2
    assert rec.itls() == []  # never a zero gap between events that came together


def test_a_coalesced_read_shares_the_gap_since_the_previous_read() -> None:
    # chunked bodies: one socket read yields one body piece per chunk, all with its stamp
    reads = [
        (10.1, _text(" a")),
        (10.3, _text(" b")),
        (10.3, _text(" c")),
        (10.3, _text(" d")),
        (10.4, _text(" e", "length") + b"data: [DONE]\n\n"),
    ]
    rec = _record()
    parse_stream(rec, reads)
    assert rec.event_reads == [0, 1, 1, 1, 2]
    assert rec.coalesced() == 2
    assert rec.itls() == pytest.approx([0.2 / 3] * 3 + [0.1])
    assert sum(rec.itls()) == pytest.approx(rec.event_times[-1] - rec.event_times[0])


def test_ttft_runs_from_when_the_request_left_and_the_wait_before_is_client_delay() -> None:
    rec = _record()  # set out to send at 10.0
    rec.left = 10.04  # the last byte went to the kernel 40 ms later
    parse_stream(rec, [(10.3, _text(" a", "length", t_recv=10.05) + b"data: [DONE]\n\n")])
    assert rec.ttft == pytest.approx(0.26)
    assert rec.client_delay == pytest.approx(0.04)
    assert rec.server_received == pytest.approx(10.05)
    unsent = _record()
    assert unsent.client_delay is None and unsent.start == unsent.sent


def test_chat_deltas_crlf_and_keepalive_comments() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]}
    reads = [
        (10.1, b": ping\r\n\r\n"),
        (10.2, (b"data: " + orjson.dumps(chunk) + b"\r\n\r\n")),
        (
            10.3,
            b"data: "
            + orjson.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]})
            + b"\r\n\r\n",
        ),
        (10.3, b"data: [DONE]\r\n\r\n"),
    ]
    rec = _record()
    parse_stream(rec, reads)
    assert rec.ok and rec.text == "Hi" and rec.output_tokens == 1 and not rec.usage_reported


def test_stream_without_end_is_incomplete_and_error_events_are_errors() -> None:
    rec = _record()
    parse_stream(rec, [(10.1, _text(" a"))])
    assert rec.error == "incomplete"
    rec = _record()
    parse_stream(rec, [(10.1, _event({"error": {"message": "boom"}}))])
    assert rec.error == "stream_error"
    rec = _record()
    parse_stream(rec, [(10.1, b"data: [DONE]\n\n")])
    assert rec.error == "no_tokens"


def test_a_first_token_read_with_later_bytes_is_only_an_upper_bound() -> None:
    # alone in its read (the header piece before it shares nothing after it): exact
    rec = _record()
    first = _text(" a")
    parse_stream(rec, [(10.1, first), (10.2, _text(" b", "length") + b"data: [DONE]\n\n")])
    assert rec.ok and not rec.ttft_upper_bound
    # read together with the next event: the kernel stamped both with the newest segment
    rec = _record()
    parse_stream(rec, [(10.2, first + _text(" b", "length")), (10.3, b"data: [DONE]\n\n")])
    assert rec.ok and rec.ttft_upper_bound
    # one socket read handed over as two body pieces (same stamp) counts as one read
    rec = _record()
    second = _text(" b", "length") + b"data: [DONE]\n\n"
    parse_stream(rec, [(10.2, first), (10.2, second[:7]), (10.4, second[7:])])
    assert rec.ok and rec.ttft_upper_bound
    # a later token coalesced with the one before it does not make the TTFT a bound
    rec = _record()
    parse_stream(
        rec,
        [(10.1, first), (10.3, _text(" b") + _text(" c", "length")), (10.4, b"data: [DONE]\n\n")],
    )
    assert rec.ok and not rec.ttft_upper_bound and rec.coalesced() == 1


def test_server_stamps_give_client_lag() -> None:
    rec = _record()
    parse_stream(rec, [(10.25, _text(" a", "length", t_send=10.2) + b"data: [DONE]\n\n")])
    assert rec.client_lag == pytest.approx([0.05])


@pytest.mark.parametrize(
    ("total", "lengths", "expected"),
    [
        (3, [1, 1, 1], [1, 1, 1]),
        (2, [5, 5, 5], [1, 1, 1]),
        (6, [1, 1, 1], [2, 2, 2]),
        (5, [0, 0], [3, 2]),
    ],
)
def test_spread_gives_each_event_one_token_and_the_excess_by_length(
    total: int, lengths: list[int], expected: list[int]
) -> None:
    got = _spread(total, lengths)
    assert sum(got) == max(total, len(lengths))
    assert got == expected


async def test_parse_queue_defers_until_close_and_parses_early_over_budget() -> None:
    import asyncio

    from bringup.bench.records import ParseQueue

    done = _text(" a", "length") + b"data: [DONE]\n\n"
    queue = ParseQueue()
    held = _record()
    queue.submit(held, [(10.1, done)])
    for _ in range(3):
        await asyncio.sleep(0)
    assert held.output_tokens == 0 and queue.held > 0  # nothing parsed while streams run
    await queue.close()
    assert held.ok and held.output_tokens == 1 and queue.held == 0

    small = ParseQueue(budget_bytes=len(done) + 150)
    first, second = _record(), _record()
    small.submit(first, [(10.1, done)])
    small.submit(second, [(10.2, _text(" b"))])  # over budget: the oldest goes first
    for _ in range(3):
        await asyncio.sleep(0)
    assert first.ok and first.output_tokens == 1
    await small.close()
    assert second.error == "incomplete" and second.text == " b"
