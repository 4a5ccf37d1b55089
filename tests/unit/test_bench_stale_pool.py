"""Closed-loop load on a server that closes each connection after its stream, unannounced.

llama-server does this; on a fast GPU the workers send their next request before the close
is seen, so several pooled connections can be stale at once. Such requests never reach the
server and must be resent, not counted as errors under load.
"""

from __future__ import annotations

import asyncio

from bringup.bench import BenchConfig
from bringup.bench.client import request_body, send, stream_pool
from bringup.bench.records import RequestRecord
from bringup.testing.fakeserver import FakeServer, FakeServerConfig

WORKERS = 8
PER_WORKER = 50


async def test_closed_loop_over_stale_pool_loses_no_request() -> None:
    cfg = BenchConfig(output_tokens=3)
    fake = FakeServer(FakeServerConfig(event_rate=1000, close_after_stream=True))
    recs: list[RequestRecord] = []
    async with fake as srv, stream_pool(srv.url, cfg) as pool:
        body = request_body(cfg, "x", length_options=True)

        async def worker(w: int) -> None:
            for i in range(PER_WORKER):
                rec = RequestRecord(index=w * PER_WORKER + i, scheduled=0.0)
                await send(pool, body, rec, 10.0)
                recs.append(rec)

        await asyncio.gather(*(worker(w) for w in range(WORKERS)))
        served = srv.stats.requests
    failed = [(r.index, r.error) for r in recs if not r.ok]
    assert failed == []
    assert all(r.output_tokens == 3 for r in recs)
    assert served == WORKERS * PER_WORKER  # every request reached the server exactly once
    retried = sum(r.retries for r in recs)
    assert retried, "the load met no stale connection; the test is moot"
    assert retried <= WORKERS  # after the first stale attempts the pool stops reusing
