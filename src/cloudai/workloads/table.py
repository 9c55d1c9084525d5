"""Write a per-size results table as CSV beside the tool's output (``nccl.csv``, ``ucc.csv``, ...)."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """One header line, one line per row; NaN cells as ``nan`` (what pandas reads back as NaN)."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
