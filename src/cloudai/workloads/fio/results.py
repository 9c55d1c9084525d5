"""fio's JSON output (``--output-format=json``/``json+``) to cloudai metrics.

Units: ``*_bw`` in MiB/s (fio's ``bw`` is KiB/s; MiB/s is what fio's own summary line and so CloudAI's
metrics show for fast devices), ``*_iops`` per second, latencies in microseconds.

Per operation ``op`` in read/write/trim that did any I/O, summed or combined over every job in the output
(``numjobs > 1`` without ``group_reporting`` gives one job entry each; with it, one entry for the group):

* ``{op}_bw``, ``{op}_iops``: sums over jobs;
* ``{op}_latency``: mean total latency (``lat_ns``; CloudAI's ``read_latency``), weighted by I/O count;
* ``{op}_clat_mean``: mean completion latency, weighted the same way;
* ``{op}_clat_p99``: 99th percentile completion latency, the worst job's (exact with ``group_reporting``).

``default`` is CloudAI's: the rows (one per job and operation) are filtered by ``metric_operation``
(``read``/``write``/``trim``, ``all``, or ``first`` row), the row value named by ``metric_name`` (``bw``,
``iops``, ``latency``, or ours: ``clat_mean``, ``clat_p99``) taken, and ``metric_aggregate`` (``sum``,
``mean``, ``min``, ``max``, ``first``) applied.

Output that holds no JSON document, a truncated one, a job with a non-zero ``error`` or no I/O at all
raises ``WorkloadError`` saying so; ``error_line`` finds fio's own error message for a failed job.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloudai.errors import WorkloadError
from cloudai.readfile import read_ends, read_regular

OPERATIONS = ("read", "write", "trim")
UNITS = {"bw": "MiB/s", "iops": "IOPS", "latency": "us", "clat_mean": "us", "clat_p99": "us"}
VALUES = tuple(UNITS)
METRIC_NAMES = ("default", *(f"{op}_{value}" for op in OPERATIONS for value in VALUES))
STDOUT, STDERR = "stdout.txt", "stderr.txt"
MAX_JSON_BYTES = 64 << 20  # fio's JSON is ~10 KiB a job: a larger stdout.txt is not fio's report
P99 = "99.000000"

AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "sum": sum,
    "mean": statistics.fmean,
    "min": min,
    "max": max,
    "first": lambda values: values[0],
}


@dataclass(frozen=True)
class MetricChoice:
    """CloudAI's ``metric_operation``/``metric_name``/``metric_aggregate``: what ``default`` is."""

    operation: str = "all"
    name: str = "bw"
    aggregate: str = "sum"


@dataclass(frozen=True)
class Row:
    """One operation of one fio job (only operations that did I/O)."""

    job: str
    operation: str
    bw: float  # MiB/s
    iops: float
    latency: float  # us, mean total latency
    clat_mean: float  # us
    clat_p99: float  # us; nan when fio reported no percentiles
    ios: int


def read_metrics(job_dir: Path, choice: MetricChoice = MetricChoice()) -> dict[str, float]:
    """The metrics of the fio run whose stdout is ``job_dir/stdout.txt``."""
    try:
        text = read_regular(job_dir / STDOUT, MAX_JSON_BYTES).decode(errors="replace")
    except FileNotFoundError:
        raise WorkloadError(f"fio wrote no {STDOUT} in {job_dir}") from None
    except OSError as exc:  # not a regular file (a job may make it /dev/zero), or larger than fio's JSON gets
        raise WorkloadError(f"{STDOUT} refused: {exc}") from None
    return metrics(parse(text), choice)


def parse(text: str) -> list[Row]:
    """Rows from fio's stdout: the first JSON document in it (fio may print notes before it)."""
    start = _json_start(text)
    if start < 0:
        raise WorkloadError(f"fio's {STDOUT} holds no JSON output{_first_line(text)}")
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"fio's JSON output is truncated or malformed ({exc.msg} at char {exc.pos})") from None
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list) or not jobs:
        raise WorkloadError("fio's JSON output has no jobs")
    rows = [row for job in jobs for row in _job_rows(job)]
    if not rows:
        raise WorkloadError("fio did no I/O: every job read, wrote and trimmed 0 bytes")
    return rows


def metrics(rows: Sequence[Row], choice: MetricChoice = MetricChoice()) -> dict[str, float]:
    out: dict[str, float] = {"default": default_metric(rows, choice)}
    for op in OPERATIONS:
        mine = [r for r in rows if r.operation == op]
        if not mine:
            continue
        ios = sum(r.ios for r in mine) or 1
        out[f"{op}_bw"] = sum(r.bw for r in mine)
        out[f"{op}_iops"] = sum(r.iops for r in mine)
        out[f"{op}_latency"] = sum(r.latency * r.ios for r in mine) / ios
        out[f"{op}_clat_mean"] = sum(r.clat_mean * r.ios for r in mine) / ios
        p99 = [r.clat_p99 for r in mine if r.clat_p99 == r.clat_p99]
        if p99:
            out[f"{op}_clat_p99"] = max(p99)
    return out


def default_metric(rows: Sequence[Row], choice: MetricChoice) -> float:
    if choice.operation == "first":
        chosen = list(rows[:1])
    elif choice.operation == "all":
        chosen = list(rows)
    else:
        chosen = [r for r in rows if r.operation == choice.operation]
    values = [v for v in (float(getattr(r, choice.name)) for r in chosen) if v == v]
    if not values:
        raise WorkloadError(
            f"no fio result for the default metric: metric_operation = '{choice.operation}' "
            f"did no I/O (operations with I/O: {', '.join(sorted({r.operation for r in rows}))})"
        )
    return float(AGGREGATES[choice.aggregate](values))


def error_line(job_dir: Path) -> str | None:
    """fio's own error message (its first ``fio: ...`` line, stderr before stdout), or None."""
    for name in (STDERR, STDOUT):
        try:
            text = read_ends(job_dir / name, 1 << 20, 0)[0].decode(errors="replace")  # fio says why first
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("fio:") or line.startswith("fio "):
                return line.strip()[:300]
    return None


def _job_rows(job: Any) -> list[Row]:
    if not isinstance(job, Mapping):
        raise WorkloadError("fio's JSON output has a job that is not an object")
    name = str(job.get("jobname", "?"))
    error = job.get("error", 0)
    if error:
        raise WorkloadError(f"fio job '{name}' ended with error {error}")
    rows = []
    for op in OPERATIONS:
        stats = job.get(op)
        if isinstance(stats, Mapping) and _number(stats, "total_ios", op) > 0:
            rows.append(_row(name, op, stats))
    return rows


def _row(job: str, op: str, stats: Mapping[str, Any]) -> Row:
    clat = stats.get("clat_ns") or {}
    lat = stats.get("lat_ns") or {}
    percentiles = clat.get("percentile") or {}
    p99 = percentiles.get(P99)
    return Row(
        job=job,
        operation=op,
        bw=_number(stats, "bw", op) / 1024,
        iops=_number(stats, "iops", op),
        latency=_number(lat, "mean", f"{op}.lat_ns") / 1000,
        clat_mean=_number(clat, "mean", f"{op}.clat_ns") / 1000,
        clat_p99=float(p99) / 1000 if isinstance(p99, int | float) else float("nan"),
        ios=int(_number(stats, "total_ios", op)),
    )


def _number(table: Mapping[str, Any], key: str, where: str) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WorkloadError(f"fio's JSON output has no number at {where}.{key} (found {value!r})")
    return float(value)


def _json_start(text: str) -> int:
    if text.startswith("{"):
        return 0
    at = text.find("\n{")
    return at + 1 if at >= 0 else -1


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f" (it starts with: {line[:200]!r})" if line else " (it is empty)"
