"""NIXL EP's per-rank bandwidth lines in its node logs (``nixl-ep-node-*.log``)::

    [rank 3] Dispatch + combine bandwidth: 41.25 GB/s, avg_t=812.40 us, min_t=790.10 us, max_t=845.70 us

CloudAI's ``default`` is the mean of those bandwidths over every log; ``avg_t_us`` the mean average time. No
such line (the run failed or was cut short) is a ``WorkloadError``.
"""

from __future__ import annotations

import re
from pathlib import Path

from cloudai.errors import WorkloadError
from cloudai.readfile import read_ends
from cloudai.workloads.base import STDOUT_HEAD, STDOUT_TAIL, write_metrics

METRICS = ("default", "avg_t_us", "min_t_us", "max_t_us")
UNITS = {"default": "GB/s", "avg_t_us": "us", "min_t_us": "us", "max_t_us": "us"}
_FLOAT = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_LINE = re.compile(
    rf"\[rank \d+\] Dispatch \+ combine bandwidth: ({_FLOAT}) GB/s, avg_t=({_FLOAT}) us, "
    rf"min_t=({_FLOAT}) us, max_t=({_FLOAT}) us"
)


def samples(text: str) -> list[tuple[float, float, float, float]]:
    return [(float(a), float(b), float(c), float(d)) for a, b, c, d in _LINE.findall(text)]


def read_metrics(job_dir: Path) -> dict[str, float]:
    found: list[tuple[float, float, float, float]] = []
    for log in sorted(job_dir.glob("nixl-ep-node-*.log")):
        try:
            data, _ = read_ends(log, STDOUT_HEAD, STDOUT_TAIL)
        except OSError:
            continue
        found += samples(data.decode(errors="replace"))
    if not found:
        raise WorkloadError("no 'Dispatch + combine bandwidth' line in the nixl-ep-node-*.log files")
    count = len(found)
    return write_metrics(job_dir, {
        "default": sum(s[0] for s in found) / count,
        "avg_t_us": sum(s[1] for s in found) / count,
        "min_t_us": min(s[2] for s in found),
        "max_t_us": max(s[3] for s in found),
    })  # fmt: skip
