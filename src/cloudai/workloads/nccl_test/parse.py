"""The nccl-tests results table, as its ``*_perf`` binaries print it.

::

    #                                                              out-of-place                       in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
             128            32     float     sum      -1    20.45    0.01    0.01      0    19.80    0.01    0.01      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 12.3456

A data row is a line of 13 fields whose first two are integers; its cells are kept as printed
(``nccl.csv`` holds them verbatim). A row with ``N/A`` or ``nan`` in a time or bandwidth column
stays in the table but out of the averages, as CloudAI drops it. ``#wrong`` ``N/A`` (validation
off) is not an error.

Contract: ``parse(text)`` never raises on any text; ``verdict(result)`` returns why the run must
count as failed (wrong values, out-of-bounds values, a table cut short, no table) or None.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from cloudai.workloads.table import number

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


_WRONG = (8, 12)  # the #wrong columns
_PLACES = {8: "out-of-place", 12: "in-place"}


@dataclass
class NcclResult:
    rows: list[list[str]] = field(default_factory=list)  # each data row's 13 cells, as the tool printed them
    avg_busbw: float | None = None  # None: the "# Avg bus bandwidth" line never came
    out_of_bounds: int | None = None
    partial_line: str = ""  # a row cut short (the job was killed mid-write)


def _after_colon(line: str) -> str:
    words = line.partition(":")[2].split()
    return words[0] if words else ""


def parse(text: str) -> NcclResult:
    """Every data row and the two summary lines of ``text`` (one ``split`` per line: it is the hot loop)."""
    result = NcclResult()
    rows, partial = result.rows, ""
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        head = parts[0]
        if head[0].isdigit():
            if len(parts) == 13 and head.isdigit() and parts[1].isdigit():
                rows.append(parts)
                partial = ""
            else:
                partial = line.strip()
        elif head == "#" and len(parts) > 3:
            if parts[1] == "Avg" and parts[2] == "bus":
                result.avg_busbw = number(_after_colon(line))
            elif parts[1] == "Out" and parts[3] == "bounds":
                value = _after_colon(line)
                result.out_of_bounds = int(value) if value.isdigit() else -1
    result.partial_line = partial
    return result


def _wrong(row: list[str]) -> tuple[str, int] | None:
    """(placement, count) of the first #wrong cell that is neither 0 nor N/A (validation off)."""
    for index in _WRONG:
        cell = row[index]
        if cell != "0" and cell != "N/A":
            return _PLACES[index], int(cell) if cell.isdigit() else -1
    return None


def _complete(rows: list[list[str]]) -> Iterator[list[float]]:
    """The six time/bandwidth numbers of each row that has them all (CloudAI drops the others)."""
    isfinite = math.isfinite
    for row in rows:
        try:
            values = [float(row[5]), float(row[6]), float(row[7]), float(row[9]), float(row[10]), float(row[11])]
        except ValueError:  # N/A
            continue
        if isfinite(sum(values)):  # NaN or inf anywhere makes the sum NaN or inf
            yield values


def verdict(result: NcclResult) -> str | None:
    """Why this run's numbers must not be trusted, or None."""
    for row in result.rows:
        wrong = _wrong(row)
        if wrong is not None:
            place, count = wrong
            amount = "an unreadable number of" if count < 0 else str(count)
            return f"nccl-tests found {amount} wrong values (#wrong) at size {row[0]} B ({place})"
    if result.out_of_bounds:
        return f"nccl-tests reported {_OUT_OF_BOUNDS.lstrip('# ')}: {result.out_of_bounds}"
    if not result.rows:
        return "no nccl-tests results table in stdout.txt (see stderr.txt)"
    if result.avg_busbw is None:
        last = result.rows[-1][0]
        cut = f"; cut off in: {result.partial_line!r}" if result.partial_line else ""
        return (
            f"nccl-tests output stops after {len(result.rows)} rows (last size {last} B) without "
            f"'{_AVG_BUSBW.lstrip('# ')}': the run was killed or crashed{cut}"
        )
    if next(_complete(result.rows), None) is None:
        return "every nccl-tests row has a NaN or N/A time or bandwidth"
    return None


def metrics(result: NcclResult) -> dict[str, float]:
    """CloudAI's ``default``/``latency-in-place``/``latency-out-of-place`` (mean time in us over the
    complete rows, times rounded to 0.01 us as CloudAI does), ``busbw`` (the tool's Avg bus bandwidth,
    GB/s) and ``algbw`` (the mean algorithm bandwidth over both placements, GB/s)."""
    numbers = list(_complete(result.rows))
    if not numbers:
        return {}
    count = len(numbers)
    values = {
        "default": sum(round(n[3], 2) for n in numbers) / count,
        "latency-out-of-place": sum(round(n[0], 2) for n in numbers) / count,
        "algbw": sum(n[1] + n[4] for n in numbers) / (2 * count),
    }
    values["latency-in-place"] = values["default"]
    if result.avg_busbw is not None:
        values["busbw"] = result.avg_busbw
    return values
