"""What a job leaves for its workload to read: ``stdout.txt`` (read by its ends, bounded) and ``metrics.json`` (one
JSON object of metric names to finite numbers), and the writing of the latter. Shared by every workload's parser."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cloudai.config.fields import shown
from cloudai.errors import WorkloadError
from cloudai.readfile import UnsafeFileError, read_ends, read_regular

METRICS_FILE = "metrics.json"
STDOUT_FILE = "stdout.txt"
MAX_METRICS_BYTES = 1024 * 1024
STDOUT_HEAD, STDOUT_TAIL = 1 << 20, 8 << 20  # bytes of a job's stdout.txt a parser reads: its header, its results


def read_metrics_file(path: Path) -> dict[str, float]:
    """``{"name": number}`` from ``path``; a missing, malformed or non-finite file raises ``WorkloadError``."""
    try:
        data = json.loads(read_regular(path, MAX_METRICS_BYTES))  # a workload may make it /dev/zero or a FIFO
    except FileNotFoundError:
        raise WorkloadError(f"no {path.name} was written") from None
    except UnsafeFileError as exc:
        raise WorkloadError(f"{path.name} refused: {exc}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise WorkloadError(f"{path.name} is not valid JSON: {exc}") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise WorkloadError(f"{path.name} is not usable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise WorkloadError(f"{path.name} must hold a JSON object of metric names to numbers")
    metrics: dict[str, float] = {}
    for key, value in data.items():
        number = _finite(value)
        if number is None:
            raise WorkloadError(f"{path.name}: metric '{key}' is {shown(value)}, not a finite number")
        metrics[str(key)] = number
    return metrics


def write_metrics(job_dir: Path, metrics: Mapping[str, float]) -> dict[str, float]:
    """Keep the finite metrics, write them as ``metrics.json`` beside the tool's output, return them."""
    kept = {name: float(value) for name, value in metrics.items() if math.isfinite(value)}
    (job_dir / METRICS_FILE).write_text(json.dumps(kept, indent=1) + "\n")
    return kept


def read_stdout(job_dir: Path, tool: str) -> str:
    """The job's ``stdout.txt``, or its first ``STDOUT_HEAD`` and last ``STDOUT_TAIL`` bytes when it is longer (a
    tool prints its header first and its results last; what lies between, e.g. gigabytes of ``NCCL_DEBUG=INFO``,
    is left unread: memory stays bounded). ``WorkloadError`` naming ``tool`` when it is missing, empty or not a
    regular file (a job may make it ``/dev/zero``): that trial fails with the reason, the sweep goes on."""
    path = job_dir / STDOUT_FILE
    try:
        data, _ = read_ends(path, STDOUT_HEAD, STDOUT_TAIL)
    except FileNotFoundError:
        raise WorkloadError(f"no {STDOUT_FILE} was written: {tool} did not run") from None
    except OSError as exc:  # UnsafeFileError: not a regular file
        raise WorkloadError(f"{STDOUT_FILE} refused: {exc}") from None
    text = data.decode(errors="replace")
    if not text.strip():
        raise WorkloadError(f"{tool} printed nothing ({STDOUT_FILE} is empty); see stderr.txt")
    return text


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range
        return None
    return number if math.isfinite(number) else None
