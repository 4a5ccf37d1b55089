"""Entry point of one client process: ``python -m bringup.bench.shard_process``.

Reads length-prefixed pickled ``Window`` frames on stdin, drives each on uvloop and answers
with the pickled ``LevelRun`` (or the exception, for the parent to raise); ends at EOF.
Kept apart from :mod:`bringup.bench.workers` so that running it never re-imports that module.
"""

from __future__ import annotations

import pickle
import sys

from bringup.bench.workers import FRAME_LEN, drive, frame, run_on_fast_loop


def serve() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(frame("ready"))
    stdout.flush()
    while header := stdin.read(FRAME_LEN.size):
        win = pickle.loads(stdin.read(FRAME_LEN.unpack(header)[0]))
        result: object
        try:
            result = run_on_fast_loop(drive(win))
        except Exception as exc:  # handed back to the parent, which re-raises it
            result = RuntimeError(f"client process failed: {exc!r}")
        stdout.write(frame(result))
        stdout.flush()


if __name__ == "__main__":
    serve()
