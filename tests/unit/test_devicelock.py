"""Turns on a shared device: measure exclusive, start-ups one at a time, a release exclusive of
start-ups, across open files of one process and across processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from asyncio import FIRST_COMPLETED
from pathlib import Path

import pytest

from bringup.server.devicelock import DeviceLocks


def test_two_measuring_turns_exclude_each_other(tmp_path: Path) -> None:
    locks = DeviceLocks(tmp_path, poll_s=0.01)
    order: list[str] = []

    async def main() -> None:
        first = await locks.turn("measuring")
        waited: list[bool] = []
        second = asyncio.ensure_future(locks.turn("measuring", on_wait=lambda: waited.append(True)))
        for _ in range(6000):  # until it says it waits (a busy machine: maybe seconds)
            if waited:
                break
            await asyncio.sleep(0.01)
        assert not second.done() and waited == [True]  # held: the second waits and says so
        order.append("first released")
        first.release()
        held = await second
        order.append("second held")
        assert held.waited_s > 0
        held.release()

    asyncio.run(main())
    assert order == ["first released", "second held"]


def test_start_ups_take_turns_and_a_release_waits_for_them(tmp_path: Path) -> None:
    locks = DeviceLocks(tmp_path, poll_s=0.01)

    async def main() -> None:
        a = await locks.turn("starting")
        b = asyncio.ensure_future(locks.turn("starting"))  # engines size memory alone
        r = asyncio.ensure_future(locks.turn("releasing"))
        await asyncio.sleep(0.1)
        assert not b.done() and not r.done()
        a.release()
        done, pending = await asyncio.wait({b, r}, timeout=120, return_when=FIRST_COMPLETED)
        assert len(done) == 1 and len(pending) == 1
        await asyncio.sleep(0.1)
        assert not next(iter(pending)).done()  # never a start-up and a release at once
        done.pop().result().release()
        (await asyncio.wait_for(pending.pop(), 120)).release()
        # measuring is a different lock: a release never waits for a benchmark
        m = await locks.turn("measuring")
        s = await asyncio.wait_for(locks.turn("starting"), 120)
        m.release()
        s.release()

    asyncio.run(main())


def test_a_cancelled_wait_leaves_no_lock_behind(tmp_path: Path) -> None:
    locks = DeviceLocks(tmp_path, poll_s=0.01)

    async def main() -> None:
        held = await locks.turn("measuring")
        waiter = asyncio.ensure_future(locks.turn("measuring"))
        await asyncio.sleep(0.05)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        held.release()
        again = await asyncio.wait_for(locks.turn("measuring"), 120)
        again.release()
        again.release()  # idempotent

    asyncio.run(main())


def test_another_process_holding_the_turn_is_waited_for(tmp_path: Path) -> None:
    code = (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(tmp_path / 'measure.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        locks = DeviceLocks(tmp_path, poll_s=0.01)

        async def main() -> float:
            waiter = asyncio.ensure_future(locks.turn("measuring"))
            await asyncio.sleep(0.2)
            assert not waiter.done()
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.flush()
            started = time.monotonic()
            held = await asyncio.wait_for(waiter, 30)
            held.release()
            return time.monotonic() - started

        asyncio.run(main())
    finally:
        holder.kill()
        holder.wait()
