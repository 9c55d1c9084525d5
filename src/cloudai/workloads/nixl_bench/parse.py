"""nixlbench's results table (also printed by NIXL's kvbench ``profile``), in either of its layouts::

    Block Size (B)      Batch Size     Avg Lat. (us)  B/W (MiB/Sec)  B/W (GiB/Sec)  B/W (GB/Sec)
    --------------------------------------------------------------------------------
    4096                1              21.1726        184.495        0.180171       0.193457

    Block Size (B)      Batch Size     B/W (GB/Sec)   Avg Lat. (us)  Avg Prep (us)  P99 Prep (us)  ...
    4096                1              0.958841       4.3            11.0           11.0           ...

The header says which column is which (columns are separated by two or more spaces); a data row is a line of as
many fields as the header whose first two are integers (UCX's own log lines between rows are skipped). Contract:
``parse(text)`` never raises; an empty result means no table (the run failed or was cut short).
"""

from __future__ import annotations

import re

from cloudai.workloads.table import complete, number

COLUMNS = ("block_size", "batch_size", "avg_lat_us", "bw_gb_sec")
_LATENCY, _BANDWIDTH = "Avg Lat. (us)", "B/W (GB/Sec)"


def parse(text: str) -> list[tuple[int, int, float, float]]:
    """``(block size, batch size, average latency us, bandwidth GB/s)`` per data row of the last table."""
    rows: list[tuple[int, int, float, float]] = []
    columns: list[str] = []
    for line in text.splitlines():
        if line.startswith("Block Size (B)") and _LATENCY in line and _BANDWIDTH in line:
            columns, rows = re.split(r"\s{2,}", line.strip()), []
            continue
        words = line.split()
        if not columns or len(words) != len(columns) or not (words[0].isdigit() and words[1].isdigit()):
            continue
        latency, bandwidth = number(words[columns.index(_LATENCY)]), number(words[columns.index(_BANDWIDTH)])
        if complete((latency, bandwidth)):
            rows.append((int(words[0]), int(words[1]), latency, bandwidth))
    return rows


def metrics(rows: list[tuple[int, int, float, float]]) -> dict[str, float]:
    """CloudAI's ``default`` and ``latency``: the mean average latency (us) over the rows; ``bw_gb_sec``: the mean
    bandwidth (GB/s), ``bw_gb_sec_max``: the largest (the big-block plateau)."""
    latency = sum(row[2] for row in rows) / len(rows)
    return {
        "default": latency,
        "latency": latency,
        "bw_gb_sec": sum(row[3] for row in rows) / len(rows),
        "bw_gb_sec_max": max(row[3] for row in rows),
    }
