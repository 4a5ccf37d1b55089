"""How long the diagnosis takes on the worst log it is given: every line says "error".

    python bench/diagnose_speed.py [LINES]

Builds ``bringup.testing.noisylog.noisy_error_log(LINES)`` (4,500 distinct lines of about
1,500 characters by default, then a CUDA OOM traceback), classifies it as
``bringup diagnose`` does, three times, and prints as its last line
``seconds=<best of 3> lines=<int> chars=<int> category=<verdict>``. The verdict must stay
``oom_gpu``: a fast answer that misses the decisive line is no answer.
"""

from __future__ import annotations

import sys
import time

from bringup.diagnose import classify
from bringup.testing.noisylog import noisy_error_log


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and not argv[0].isdigit()):
        print("usage: diagnose_speed.py [LINES]", file=sys.stderr)
        return 2
    n = int(argv[0]) if argv else 4500
    log = noisy_error_log(n)
    best, category = float("inf"), ""
    for _ in range(3):
        start = time.perf_counter()
        d = classify(log, engine="vllm")
        best = min(best, time.perf_counter() - start)
        category = d.label
    print(f"seconds={best:.2f} lines={n} chars={len(log)} category={category}")
    return 0 if category == "oom_gpu" else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
