"""Paxml's log (absl, on stderr), as JAX-Toolbox's ``paxml.main`` prints it and CloudAI reads it.

::

    I0508 15:25:28.482553 140737334253888 programs.py:379] [PAX STATUS]: train_step() took 38.727223 seconds.
    I0508 15:26:41.019220 140737334253888 summary_utils.py:402] step_i: 20, training loss: 10.369921
    I0508 15:26:55.113402 140737334253888 main.py:563] [PAX STATUS]: E2E time: Elapsed time for <_main>: 1203.4 seconds

Paxml logs ``train_step() took`` for the first 20 steps of each process. CloudAI keeps the times after the first
10 of each file (``error-*.txt``, one per rank); so do we, per stream (``training_log.steady``), and report
their median. A run is complete once ``E2E time: Elapsed time for`` is printed.

``parse(texts)`` never raises; ``verdict(log)`` says why a run failed: the fatal error it shows (CUDA/XLA out of
memory first; missing heartbeats; an NCCL failure; pyxis out of disk), no step time, or a log cut short.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from cloudai.workloads.training_log import fatal_error, steady

_STEP = re.compile(r"\[PAX STATUS\]: train_step\(\) took\s+([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?) seconds")
_LOSS = re.compile(r"training loss:\s*(?:Array\()?\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)")
_DONE = "E2E time: Elapsed time for"
_PYXIS = re.compile(r"pyxis:\s+mktemp: failed to create directory via template")


@dataclass
class PaxLog:
    step_times: list[float] = field(default_factory=list)  # after each stream's warm-up
    losses: list[float] = field(default_factory=list)
    done: bool = False
    fatal: str | None = None


def parse(texts: Sequence[str]) -> PaxLog:
    """One ``PaxLog`` from the streams ``texts`` (one per rank, or the job's merged stderr)."""
    log = PaxLog()
    for text in texts:
        log.step_times += steady([float(m.group(1)) for m in _STEP.finditer(text)])
        log.losses += [float(m.group(1)) for m in _LOSS.finditer(text)]
        log.done = log.done or _DONE in text
    joined = "\n".join(texts)
    log.fatal = fatal_error(joined) or (
        "pyxis could not unpack the image (no disk space for its cache)" if _PYXIS.search(joined) else None
    )
    return log


def verdict(log: PaxLog) -> str | None:
    if log.fatal and not log.done:
        return log.fatal
    if not log.step_times:
        return "no '[PAX STATUS]: train_step() took' line in the Paxml log"
    if not log.done:
        return "the Paxml log stops before '[PAX STATUS]: E2E time' (truncated)"
    return None


def metrics(log: PaxLog) -> dict[str, float]:
    """``default`` and ``step_time_s``: the median step time (s) after the warm-up; ``loss``: the last one."""
    out: dict[str, float] = {}
    if log.step_times:
        out["default"] = out["step_time_s"] = statistics.median(log.step_times)
    if log.losses:
        out["loss"] = log.losses[-1]
    return out
