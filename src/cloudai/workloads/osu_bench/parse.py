"""OSU micro-benchmark output: a ``# Size ...`` header, then one row per message size.

Three table kinds, told apart by the header (as CloudAI's ``osu_bench`` report does)::

    # Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations   (latency, -f/--full)
    # Size       Avg Latency(us)                                                  (latency)
    # Size      Bandwidth (MB/s)                                                  (bandwidth)
    # Size                  MB/s        Messages/s                                (multiple bandwidth)

Columns keep CloudAI's names (``size``, ``avg_lat``, ``mb_sec``, ``messages_sec``; ours for the
full listing: ``min_lat``, ``max_lat``, ``iterations``). Metrics are the values of the *last* row
(the largest message size) without a NaN cell; ``default`` is ``avg_lat`` for latency tables and ``mb_sec`` otherwise.
Contract: ``parse(text)`` never raises; ``verdict`` says why a run's numbers cannot be used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cloudai.workloads.table import complete, number

_HEADERS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (
        re.compile(r"#\s*Size\s+Avg Latency\(us\)\s+Min Latency\(us\)\s+Max Latency\(us\)\s+Iterations"),
        ("size", "avg_lat", "min_lat", "max_lat", "iterations"),
    ),
    (re.compile(r"#\s*Size\s+Avg Latency\(us\)"), ("size", "avg_lat")),
    (re.compile(r"#\s*Size\s+MB/s\s+Messages/s"), ("size", "mb_sec", "messages_sec")),
    (re.compile(r"#\s*Size\s+Bandwidth\s*\(MB/s\)"), ("size", "mb_sec")),
)


@dataclass
class OsuResult:
    columns: tuple[str, ...] = ()  # empty: no known table header was found
    rows: list[tuple[float, ...]] = field(default_factory=list)
    partial_line: str = ""


def _header(line: str) -> tuple[str, ...]:
    for pattern, columns in _HEADERS:
        if pattern.match(line):
            return columns
    return ()


def _row(parts: list[str], width: int) -> tuple[float, ...] | None:
    if len(parts) < width or not parts[0].isdigit():
        return None
    return tuple(number(part) for part in parts[:width])


def parse(text: str) -> OsuResult:
    result = OsuResult()
    for line in text.splitlines():
        stripped = line.strip()
        if not result.columns:
            result.columns = _header(stripped)
            continue
        if not stripped or not stripped[0].isdigit():
            continue
        row = _row(stripped.split(), len(result.columns))
        if row is None:
            result.partial_line = stripped
        else:
            result.rows.append(row)
            result.partial_line = ""
    return result


def verdict(result: OsuResult) -> str | None:
    if not result.columns:
        return "no OSU results table ('# Size ...' header) in stdout.txt (see stderr.txt)"
    if not result.rows:
        return "the OSU results table has no rows (see stderr.txt)"
    if result.partial_line:
        return f"OSU output is cut short after {len(result.rows)} rows: {result.partial_line!r}"
    if _last_complete(result) is None:
        return f"every one of the {len(result.rows)} OSU rows has a NaN cell"
    return None


def _last_complete(result: OsuResult) -> tuple[float, ...] | None:
    return next((row for row in reversed(result.rows) if complete(row)), None)


def metrics(result: OsuResult) -> dict[str, float]:
    row = _last_complete(result)
    if row is None:
        return {}
    last = dict(zip(result.columns, row, strict=True))
    last.pop("size")
    last.pop("iterations", None)
    headline = "avg_lat" if "avg_lat" in last else "mb_sec"
    return {"default": last[headline], **last}
