"""``comm_replay``'s performance summary, the part CloudAI's report reads: per collective, a ``Replayed N op`` line,
then a ``Latency (us)`` line and one row of numbers (total, max, min, average, p50, p95)::

    Performance of replayed comms
    [Rank   0] Replayed 120 all_reduce
    [Rank   0] Latency (us): Total, Max., Min., Average, p50, p95
    [Rank   0]   12345.60   310.20   48.10   102.88   98.40   201.70

Contract: ``parse(text)`` never raises; an operation whose latency row never came is left out.
"""

from __future__ import annotations

import re

from cloudai.workloads.table import complete, number

COLUMNS = ("op", "count", "total_us", "max_us", "min_us", "avg_us", "p50_us", "p95_us")
_REPLAYED = re.compile(r"Replayed (\d+) (\w+)")
_NUMBER = re.compile(r"^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$")


def parse(text: str) -> list[list[object]]:
    """``[op, count, total, max, min, average, p50, p95]`` per replayed operation with a latency row."""
    rows: list[list[object]] = []
    op: tuple[str, int] | None = None
    waiting = False
    for line in text.splitlines():
        replayed = _REPLAYED.search(line)
        if replayed and "Latency (us)" not in line:
            op, waiting = (replayed.group(2), int(replayed.group(1))), False
        elif "Latency (us)" in line:
            waiting = op is not None
        elif waiting and op is not None:
            values = [number(w) for w in line.replace("]", " ").split() if _NUMBER.match(w)]
            if len(values) >= 6 and complete(values[-6:]):
                rows.append([op[0], op[1], *values[-6:]])
                op, waiting = None, False
    return rows


def metrics(rows: list[list[object]]) -> dict[str, float]:
    """``default``: the mean of the operations' average latencies (us); their p95 and max."""
    averages = [float(str(row[5])) for row in rows]
    return {
        "default": sum(averages) / len(averages),
        "latency_avg_us": sum(averages) / len(averages),
        "latency_p95_us": max(float(str(row[7])) for row in rows),
        "latency_max_us": max(float(str(row[3])) for row in rows),
    }
