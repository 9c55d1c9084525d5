"""What every training log parser needs: the steady-state step time, and why a run died.

Shared by the training workloads (MegatronRun, JaxToolbox; NeMo's parser may use it too):

* ``steady(values)`` drops the warm-up (compilation, allocator growth, the first data loads) before a median:
  the first ``WARMUP_STEPS`` values, but never more than half of them, so a short run still reports;
* ``median_after_warmup(values)`` is the headline step time of a run (robust to a stray slow step);
* ``read_logs(paths)`` is the text of the logs that exist, each bounded as ``base.read_stdout`` bounds a
  job's stdout (its first MiB and last 8 MiB), for a parser or ``fatal_error``;
* ``fatal_error(text)`` names the failure a log shows, by the lines the frameworks print: CUDA / XLA out of
  memory first (``OUT_OF_MEMORY``: an agent learns from it that the point is too big), then an NCCL
  watchdog timeout, a lost peer, an NCCL error. None for a log without any.

Contract: they never raise (``read_logs`` skips a missing or unsafe file).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path

from cloudai.readfile import read_ends

WARMUP_STEPS = 10
OUT_OF_MEMORY = "out of memory"

# (pattern, reason) in priority order: an OOM often ends in an NCCL error on the other ranks, and is the cause.
_FATAL: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"CUDA out of memory|CUDA error: out of memory|OutOfMemoryError", re.I), OUT_OF_MEMORY),
    (re.compile(r"RESOURCE_EXHAUSTED: Out of memory|Resource exhausted: Out of memory", re.I), OUT_OF_MEMORY),
    (re.compile(r"cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED"), OUT_OF_MEMORY),
    (re.compile(r"Watchdog caught collective operation timeout[^\n]*"), "NCCL timeout"),
    (re.compile(r"NCCL (?:communicator was aborted|timeout)[^\n]*", re.I), "NCCL timeout"),
    (re.compile(r"coordinator detected missing heartbeats"), "a peer process died (missing heartbeats)"),
    (re.compile(r"NCCL operation \w+\(\) failed[^\n]*|NCCL error[^\n]*"), "NCCL error"),
    (re.compile(r"CUDA_ERROR_NO_DEVICE[^\n]*|no CUDA-capable device is detected"), "no CUDA device"),
)


def steady(values: Sequence[float], warmup: int = WARMUP_STEPS) -> list[float]:
    """``values`` without the warm-up: the first ``warmup`` of them, at most half (a run of 6 steps keeps 3)."""
    return list(values[min(warmup, len(values) // 2) :])


def median_after_warmup(values: Sequence[float], warmup: int = WARMUP_STEPS) -> float | None:
    """The median of ``steady(values)``; None when there are no values."""
    kept = steady(values, warmup)
    return statistics.median(kept) if kept else None


def read_logs(paths: Iterable[Path]) -> str:
    """The bounded text of every path that is a readable regular file, one after another."""
    from cloudai.workloads.base import STDOUT_HEAD, STDOUT_TAIL

    texts = []
    for path in paths:
        try:
            data, _ = read_ends(path, STDOUT_HEAD, STDOUT_TAIL)
        except OSError:  # missing, or not a regular file (UnsafeFileError)
            continue
        texts.append(data.decode(errors="replace"))
    return "\n".join(texts)


def fatal_error(text: str) -> str | None:
    """The reason the log ``text`` shows a run died (``OUT_OF_MEMORY`` first), or None."""
    for pattern, reason in _FATAL:
        if pattern.search(text):
            return reason
    return None


def is_oom(reason: str | None) -> bool:
    return reason == OUT_OF_MEMORY
