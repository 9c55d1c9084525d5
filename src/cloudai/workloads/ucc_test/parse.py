"""``ucc_perftest -F`` output: a header, then one row of 8 numbers per message size.

::

           Count        Size                Time, us                           Bandwidth, GB/s
                                     avg         min         max         avg         max         min
               1           4       12.46       11.48       13.51        0.00        0.00        0.00

Contract: ``parse(text)`` never raises; ``verdict`` says why a run's numbers cannot be used.
Metrics follow CloudAI (``default`` = ``time-avg``, ``time-max``: the *first* size's values, since
CloudAI tunes one message size at a time), plus ``time-min`` and ``bw-avg``/``bw-max``/``bw-min``
(GB/s) of the same row. A row with a NaN cell is kept in the table but never chosen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cloudai.workloads.table import complete, number

COLUMNS = (
    "Count",
    "Size (B)",
    "Time Avg (us)",
    "Time Min (us)",
    "Time Max (us)",
    "Bandwidth (GB/s) avg",
    "Bandwidth (GB/s) max",
    "Bandwidth (GB/s) min",
)  # CloudAI's names (its parse_ucc_output)


@dataclass
class UccResult:
    rows: list[tuple[float, ...]] = field(default_factory=list)  # the 8 columns, as numbers
    partial_line: str = ""


def _numbers(parts: list[str]) -> tuple[float, ...] | None:
    if not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return tuple(number(part) for part in parts)


def parse(text: str) -> UccResult:
    result = UccResult()
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or not stripped[0].isdigit():
            continue
        parts = stripped.split()
        row = _numbers(parts) if len(parts) == len(COLUMNS) else None
        if row is None:
            result.partial_line = stripped
        else:
            result.rows.append(row)
            result.partial_line = ""
    return result


def verdict(result: UccResult) -> str | None:
    if not result.rows:
        return "no ucc_perftest results table in stdout.txt (see stderr.txt)"
    if result.partial_line:
        return f"ucc_perftest output is cut short after {len(result.rows)} rows: {result.partial_line!r}"
    if _first_complete(result) is None:
        return f"every one of the {len(result.rows)} ucc_perftest rows has a NaN cell"
    return None


def _first_complete(result: UccResult) -> tuple[float, ...] | None:
    return next((row for row in result.rows if complete(row)), None)


def metrics(result: UccResult) -> dict[str, float]:
    first = _first_complete(result)
    if first is None:
        return {}
    return {
        "default": first[2],
        "time-avg": first[2],
        "time-min": first[3],
        "time-max": first[4],
        "bw-avg": first[5],
        "bw-max": first[6],
        "bw-min": first[7],
    }
