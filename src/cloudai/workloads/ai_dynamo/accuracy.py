"""aiperf's accuracy benchmark result (``accuracy_results.csv``) as a 0-1 fraction: CloudAI's ``accuracy`` metric.

The file (under the accuracy run's artifact dir) is one row per task and an ``OVERALL`` row::

    Task,Correct,Total,Accuracy
    abstract_algebra,35,100,35.00%
    OVERALL,35,100,35.00%

``Accuracy`` may be a percentage (``35.00%``, or a number above 1) or a fraction; without it, Correct/Total.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from cloudai.readfile import read_regular

RESULTS = "accuracy_results.csv"


def _fraction(row: dict[str, str]) -> float | None:
    text = (row.get("Accuracy") or "").strip()
    try:
        if text:
            value = float(text.removesuffix("%"))
            return value / 100 if text.endswith("%") or value > 1 else value
        total = float(row.get("Total") or 0)
        return float(row.get("Correct") or 0) / total if total else None
    except ValueError:
        return None


def read_accuracy(job_dir: Path, artifact_dir: str = "aiperf_accuracy_artifacts") -> float | None:
    """The OVERALL accuracy (else the first task's), or None when the accuracy run left no result."""
    paths = [job_dir / RESULTS, *sorted((job_dir / artifact_dir).rglob(RESULTS))]
    for path in paths:
        try:
            rows = list(csv.DictReader(io.StringIO(read_regular(path, 1 << 20).decode(errors="replace"))))
        except OSError:
            continue
        values = [(row.get("Task", "").strip().upper(), _fraction(row)) for row in rows]
        found = [value for _, value in values if value is not None]
        overall = [value for task, value in values if task == "OVERALL" and value is not None]
        if overall or found:
            return (overall or found)[0]
    return None
