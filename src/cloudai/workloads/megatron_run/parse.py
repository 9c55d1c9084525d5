"""Megatron-LM's training log (``pretrain_gpt.py`` and scripts built on ``megatron.training``), as it prints it.

::

    ------------------------ arguments ------------------------
      seq_length ...................................... 4096
    -------------------- end of arguments ---------------------
     [2026-01-16 07:32:39] iteration        6/     100 | consumed samples:  12288 | elapsed time per iteration (ms):
       15639.0 | throughput per GPU (TFLOP/s/GPU): 494.6 | learning rate: 4.180800E-07 | global batch size:  2048 |
       lm loss: 1.342407E+01 | loss scale: 1.0 | grad norm: 2.867 | number of skipped iterations:   0 | ...
    [Rank 0] (after 6 iterations) memory (MB) | allocated: 20611.4 | max allocated: 61217.9 | reserved: 65100.0 |
       max reserved: 65100.0
    [after training is done] datetime: 2026-01-16 07:58:02

(each record on one line). ``parse(text)`` never raises; ``verdict(log)`` says why the run failed: the fatal error
it shows (``training_log.fatal_error``: CUDA out of memory first), no iteration line at all, or a log that stops
before its last iteration (``iteration N/ M`` with N < M and no "after training is done").
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from cloudai.workloads.training_log import fatal_error, median_after_warmup

_NUM = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
_ITERATION = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_FIELDS = {
    "time_ms": re.compile(rf"elapsed time per iteration \(ms\):\s*{_NUM}"),
    "tflops": re.compile(rf"throughput per GPU \(TFLOP/s/GPU\):\s*{_NUM}"),
    "loss": re.compile(rf"\blm loss:\s*{_NUM}"),
    "gbs": re.compile(r"global batch size:\s*(\d+)"),
}
_MEMORY = re.compile(rf"memory \(MB\).*?\|\s*max allocated:\s*{_NUM}(?:.*?\|\s*max reserved:\s*{_NUM})?")
_SEQ_LENGTH = re.compile(r"^\s*seq_length \.+ (\d+)\s*$", re.M)
_DONE = "[after training is done]"
CLOUDAI_LAST = 10  # CloudAI's default: the mean over the last 10 iterations


@dataclass
class MegatronLog:
    """What one training log says; lists in iteration order."""

    times_ms: list[float] = field(default_factory=list)
    tflops: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    iteration: tuple[int, int] | None = None  # the last (N, M) of "iteration N/ M"
    global_batch: int | None = None
    seq_length: int | None = None
    peak_memory_mb: float | None = None  # the largest "max reserved" (else "max allocated") of any rank
    done: bool = False
    fatal: str | None = None


def parse(text: str) -> MegatronLog:
    log = MegatronLog(done=_DONE in text, fatal=fatal_error(text))
    seq = _SEQ_LENGTH.search(text)
    log.seq_length = int(seq.group(1)) if seq else None
    for line in text.splitlines():
        if "elapsed time per iteration" in line:
            _iteration_line(log, line)
        elif "memory (MB)" in line:
            _memory_line(log, line)
    return log


def _iteration_line(log: MegatronLog, line: str) -> None:
    found = {name: pattern.search(line) for name, pattern in _FIELDS.items()}
    time_ms = found["time_ms"]
    if time_ms is None:  # a line cut short
        return
    log.times_ms.append(float(time_ms.group(1)))
    if found["tflops"]:
        log.tflops.append(float(found["tflops"].group(1)))
    if found["loss"]:
        log.losses.append(float(found["loss"].group(1)))
    if found["gbs"]:
        log.global_batch = int(found["gbs"].group(1))
    if it := _ITERATION.search(line):
        log.iteration = (int(it.group(1)), int(it.group(2)))


def _memory_line(log: MegatronLog, line: str) -> None:
    match = _MEMORY.search(line)
    if match:
        value = float(match.group(2) or match.group(1))
        log.peak_memory_mb = max(value, log.peak_memory_mb or 0.0)


def progress(text: str) -> list[tuple[int, float]]:
    """``(iteration, mean ms of the last 10 iterations so far)`` per iteration line of ``text``: the headline
    metric as the run goes (a line cut short, or one without its number, is skipped)."""
    points: list[tuple[int, float]] = []
    window: list[float] = []
    for line in text.splitlines():
        it, time_ms = _ITERATION.search(line), _FIELDS["time_ms"].search(line)
        if it and time_ms:
            window = [*window[1 - CLOUDAI_LAST :], float(time_ms.group(1))]
            points.append((int(it.group(1)), statistics.fmean(window)))
    return points


def verdict(log: MegatronLog) -> str | None:
    """Why the run must count as failed, or None."""
    if log.fatal and not log.done:
        return log.fatal
    if not log.times_ms:
        return "no Megatron iteration line ('elapsed time per iteration (ms): ...') in the log"
    if log.iteration and log.iteration[0] < log.iteration[1] and not log.done:
        return f"the log stops at iteration {log.iteration[0]}/{log.iteration[1]} (truncated)"
    return None


def metrics(log: MegatronLog) -> dict[str, float]:
    """CloudAI's (``default`` = ``iteration-time``: mean ms of the last 10 iterations; ``tflops-per-gpu``) and
    ours (medians after the warm-up, ``training_log``)."""
    out: dict[str, float] = {}
    if log.times_ms:
        out["default"] = out["iteration-time"] = statistics.fmean(log.times_ms[-CLOUDAI_LAST:])
        step_ms = median_after_warmup(log.times_ms)
        if step_ms is not None and step_ms > 0:
            out["step_time_s"] = step_ms / 1000
            if log.global_batch and log.seq_length:
                out["tokens_per_s"] = log.global_batch * log.seq_length / out["step_time_s"]
    if log.tflops:
        out["tflops-per-gpu"] = statistics.fmean(log.tflops[-CLOUDAI_LAST:])
        out["tflops_per_gpu"] = median_after_warmup(log.tflops) or 0.0
    if log.peak_memory_mb is not None:
        out["peak_memory_gb"] = log.peak_memory_mb * 2**20 / 1e9  # Megatron's "MB" are MiB
    if log.losses:
        out["loss"] = log.losses[-1]
    return out
