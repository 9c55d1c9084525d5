"""The MoE benchmark's results: one ``benchmark_<ranks>_ranks_<time>_<mode>/results.json`` per backend run
(directly in the job dir, or under ``results/``), each a JSON list of per-configuration records such as::

    [{"backend": "legacy", "num_tokens": 4096, "hidden": 7168, "time_s": 0.00123, "bus_bw_avg": 41.2,
      "bus_bw_min": 40.8, "bus_bw_max": 41.9, "global_bw": 329.6}, ...]

Metrics: ``default`` is the mean ``bus_bw_avg`` (GB/s, higher is better) over every record of every backend;
``time_s`` their mean; ``global_bw`` and ``bus_bw_max`` the best. A record without a finite ``bus_bw_avg`` is
skipped; no usable record is a ``WorkloadError`` naming what was found.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from cloudai.errors import WorkloadError
from cloudai.readfile import UnsafeFileError, read_regular
from cloudai.workloads.base import write_metrics

METRICS = ("default", "bus_bw_avg", "bus_bw_max", "global_bw", "time_s")
UNITS = {"default": "GB/s", "bus_bw_avg": "GB/s", "bus_bw_max": "GB/s", "global_bw": "GB/s", "time_s": "s"}
MAX_BYTES = 16 << 20


def results_files(job_dir: Path) -> list[Path]:
    found = []
    for pattern in ("results/benchmark_*_ranks_*/results.json", "benchmark_*_ranks_*/results.json"):
        found += sorted(job_dir.glob(pattern))
    return found


def records(path: Path) -> list[dict[str, object]]:
    try:
        data = json.loads(read_regular(path, MAX_BYTES))
    except (OSError, UnsafeFileError, ValueError, RecursionError):
        return []  # a torn or unreadable file: its backend gave nothing
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def _value(record: dict[str, object], key: str) -> float | None:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def read_metrics(job_dir: Path) -> dict[str, float]:
    files = results_files(job_dir)
    rows = [r for path in files for r in records(path) if _value(r, "bus_bw_avg") is not None]
    if not rows:
        what = f"{len(files)} results.json file(s) without a bus_bw_avg record" if files else "no results.json"
        raise WorkloadError(f"MoE benchmark: {what} under benchmark_*_ranks_* (see stdout.txt)")

    def values(key: str) -> list[float]:
        return [v for r in rows if (v := _value(r, key)) is not None]

    bus = values("bus_bw_avg")
    metrics = {"default": sum(bus) / len(bus), "bus_bw_avg": sum(bus) / len(bus)}
    for key, pick in (("bus_bw_max", max), ("global_bw", max)):
        if found := values(key):
            metrics[key] = pick(found)
    if times := values("time_s"):
        metrics["time_s"] = sum(times) / len(times)
    return write_metrics(job_dir, metrics)
