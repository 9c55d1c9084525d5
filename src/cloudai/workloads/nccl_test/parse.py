"""The nccl-tests results table, as its ``*_perf`` binaries print it.

::

    #                                                              out-of-place                       in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
             128            32     float     sum      -1    20.45    0.01    0.01      0    19.80    0.01    0.01      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 12.3456

A data row is a line of 13 fields whose first is a number. ``N/A`` (or ``nan``) in a number
column reads as NaN; such rows are kept in the table but left out of the averages, as CloudAI
drops them. ``#wrong`` ``N/A`` (validation off) reads as 0.

Contract: ``parse(text)`` never raises on any text; ``verdict(result)`` returns why the run must
count as failed (wrong values, out-of-bounds values, a table cut short, no table) or None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

COLUMNS = (
    "Size (B)",
    "Count",
    "Type",
    "Redop",
    "Root",
    "Time (us) Out-of-place",
    "Algbw (GB/s) Out-of-place",
    "Busbw (GB/s) Out-of-place",
    "#Wrong Out-of-place",
    "Time (us) In-place",
    "Algbw (GB/s) In-place",
    "Busbw (GB/s) In-place",
    "#Wrong In-place",
)  # CloudAI's names for the same columns (its cloudai_nccl_test_csv_report.csv)
_AVG_BUSBW = "# Avg bus bandwidth"
_OUT_OF_BOUNDS = "# Out of bounds values"


@dataclass(frozen=True, slots=True)
class Row:
    size: int
    count: int
    type: str
    redop: str
    root: str
    oop: tuple[float, float, float]  # time (us), algbw, busbw (GB/s)
    oop_wrong: int
    ip: tuple[float, float, float]
    ip_wrong: int

    @property
    def complete(self) -> bool:
        return all(math.isfinite(v) for v in (*self.oop, *self.ip))

    def cells(self) -> list[object]:
        head = [self.size, self.count, self.type, self.redop, self.root]
        return [*head, *self.oop, self.oop_wrong, *self.ip, self.ip_wrong]


@dataclass
class NcclResult:
    rows: list[Row] = field(default_factory=list)
    avg_busbw: float | None = None  # None: the "# Avg bus bandwidth" line never came
    out_of_bounds: int | None = None
    partial_line: str = ""  # a row cut short (the job was killed mid-write)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:  # N/A, or garbage
        return math.nan


def _wrong(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0 if text.upper() == "N/A" else -1  # -1: unreadable, reported as such


def _row(parts: list[str]) -> Row | None:
    try:
        size, count = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    oop = (_number(parts[5]), _number(parts[6]), _number(parts[7]))
    ip = (_number(parts[9]), _number(parts[10]), _number(parts[11]))
    return Row(size, count, parts[2], parts[3], parts[4], oop, _wrong(parts[8]), ip, _wrong(parts[12]))


def _after_colon(line: str) -> str:
    return line.partition(":")[2].split()[0] if line.partition(":")[2].split() else ""


def parse(text: str) -> NcclResult:
    """Every data row and the two summary lines of ``text``."""
    result = NcclResult()
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped[0].isdigit():
            parts = stripped.split()
            row = _row(parts) if len(parts) == 13 else None
            if row is None:
                result.partial_line = stripped
            else:
                result.rows.append(row)
                result.partial_line = ""
        elif stripped.startswith(_AVG_BUSBW):
            result.avg_busbw = _number(_after_colon(stripped))
        elif stripped.startswith(_OUT_OF_BOUNDS):
            value = _after_colon(stripped)
            result.out_of_bounds = int(value) if value.isdigit() else -1
    return result


def verdict(result: NcclResult) -> str | None:
    """Why this run's numbers must not be trusted, or None."""
    for row in result.rows:
        for wrong, place in ((row.oop_wrong, "out-of-place"), (row.ip_wrong, "in-place")):
            if wrong != 0:
                count = "an unreadable number of" if wrong < 0 else str(wrong)
                return f"nccl-tests found {count} wrong values (#wrong) at size {row.size} B ({place})"
    if result.out_of_bounds:
        return f"nccl-tests reported {_OUT_OF_BOUNDS.lstrip('# ')}: {result.out_of_bounds}"
    if not result.rows:
        return "no nccl-tests results table in stdout.txt (see stderr.txt)"
    if result.avg_busbw is None:
        last = result.rows[-1].size
        cut = f"; cut off in: {result.partial_line!r}" if result.partial_line else ""
        return (
            f"nccl-tests output stops after {len(result.rows)} rows (last size {last} B) without "
            f"'{_AVG_BUSBW.lstrip('# ')}': the run was killed or crashed{cut}"
        )
    if not any(row.complete for row in result.rows):
        return "every nccl-tests row has a NaN or N/A time or bandwidth"
    return None


def metrics(result: NcclResult) -> dict[str, float]:
    """CloudAI's ``default``/``latency-in-place``/``latency-out-of-place`` (mean time in us over the
    complete rows, times rounded to 0.01 us as CloudAI does), ``busbw`` (the tool's Avg bus bandwidth,
    GB/s) and ``algbw`` (the mean algorithm bandwidth over both placements, GB/s)."""
    rows = [row for row in result.rows if row.complete]
    if not rows:
        return {}
    in_place = sum(round(row.ip[0], 2) for row in rows) / len(rows)
    out_of_place = sum(round(row.oop[0], 2) for row in rows) / len(rows)
    algbw = sum(row.oop[1] + row.ip[1] for row in rows) / (2 * len(rows))
    values = {
        "default": in_place,
        "latency-in-place": in_place,
        "latency-out-of-place": out_of_place,
        "algbw": algbw,
    }
    if result.avg_busbw is not None:
        values["busbw"] = result.avg_busbw
    return values
