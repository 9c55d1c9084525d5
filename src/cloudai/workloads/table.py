"""Per-size results tables of the tools' output: their cells read as numbers, and the table written as CSV
beside the tool's output (``nccl.csv``, ``ucc.csv``, ...)."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path


def number(text: str) -> float:
    """A printed cell as a float; NaN for ``N/A``, ``nan`` or anything else that is not a number."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def complete(row: Sequence[float]) -> bool:
    """No NaN or infinite cell: a row whose numbers may be used as metrics."""
    return all(math.isfinite(v) for v in row)


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """One header line, one line per row; NaN cells as ``nan`` (what pandas reads back as NaN)."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
