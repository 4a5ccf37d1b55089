"""The CPU left to a trial: measured from /proc, ours told apart from other processes'."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from bringup.contention import (
    CONTENDED_SHARE,
    Contention,
    ContentionMeter,
    contention_warnings,
    cpu_left_cell,
)
from bringup.testing.hogs import cpu_hogs

METER_IN_CHILD = """
import json, time
from bringup.contention import ContentionMeter
m = ContentionMeter.start("benchmark")
time.sleep(2.0)
print(json.dumps(m.stop().model_dump()))
"""


def test_own_work_is_ours_not_others() -> None:
    meter = ContentionMeter.start("trial")
    t0 = time.process_time()
    while time.process_time() - t0 < 0.3:
        pass
    c = meter.stop()
    assert c.ours_cpu_s >= 0.25
    assert c.cores >= 1 and c.wall_s >= 0.3


def test_hogs_outside_the_measured_process_are_others() -> None:
    """Hogs started here are not descendants of the measuring process: they are others'."""
    with cpu_hogs(2):
        out = subprocess.run(
            [sys.executable, "-c", METER_IN_CHILD], capture_output=True, text=True, check=True
        )
    c = Contention.model_validate(json.loads(out.stdout))
    # two busy loops on this machine's cores: at least half the machine is not ours
    # (on two cores; on more, two cores' worth)
    assert c.others_cpu_s >= 0.5 * min(2, c.cores) * c.wall_s * 0.5
    assert c.ours_cpu_s < 0.5 * c.wall_s
    if c.cores <= 4:
        assert c.contended and c.left_share <= 1 - CONTENDED_SHARE


def test_shares_cell_and_warning() -> None:
    c = Contention(
        window="benchmark", wall_s=10, cores=2, others_cpu_s=8, steal_s=2, ours_cpu_s=9, load1=3
    )
    assert abs(c.others_share - 0.4) < 1e-9 and abs(c.steal_share - 0.1) < 1e-9
    assert abs(c.left_share - 0.5) < 1e-9 and c.contended
    assert cpu_left_cell({"benchmark": c}) == "50%!"
    assert cpu_left_cell({}) == "-"
    quiet = c.model_copy(update={"others_cpu_s": 0.5, "steal_s": 0})
    assert cpu_left_cell({"trial": quiet}) == "98%"
    warnings = contention_warnings([("t1", {"benchmark": c}), ("t2", {"benchmark": quiet})])
    assert len(warnings) == 1 and warnings[0].startswith("t1:") and "steal 10%" in warnings[0]
