"""What LLM training jobs print, read into per-step records and the metrics a search compares.

Three formats, as the tools print them (one line per logged step):

* NeMo 2.0 / NeMo-Run (Lightning's progress line, NeMo's ``MegatronProgressBar``)::

    Training epoch 0, iteration 9/49 | lr: 1.5e-06 | global_batch_size: 128 | global_step: 9 |
        reduced_train_loss: 11.03 | train_step_timing in s: 5.12 | TFLOPS_per_GPU: 380.5 |
        peak_memory_usage: 61203283968 | consumed_samples: 1280

  (one line; ``TFLOPS_per_GPU`` with a FLOPs callback, ``peak_memory_usage`` in bytes with
  ``NEMO_LOG_MEMORY_USAGE=1``). NeMo-Launcher (NeMo 1.x) logs ``train_step_timing in s: [2.9, 3.0, ...]``.
* Megatron-LM / Megatron-Bridge: ``iteration 10/100 | ... | elapsed time per iteration (ms): 15639.0 |
  throughput per GPU (TFLOP/s/GPU): 494.6 | ... | lm loss: 1.084E+01 |``, the memory report
  ``[Rank 0] (after 10 iterations) memory (MB) | allocated: ... | max allocated: 45678.9 | ...`` and
  Megatron-Bridge's performance line ``Step Time : 11.59s GPU utilization: 640.3MODEL_TFLOP/s/GPU``.

Contract: the parsers never raise on any text; ``fatal(text)`` names a CUDA out-of-memory ("out of memory", so the
agent learns the point is too big) or an NCCL watchdog timeout, ``problem(text)`` also a Python exception line.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

OOM = "out of memory"
_OOM_RE = re.compile(r"(?:torch\.(?:cuda\.)?OutOfMemoryError|CUDA out of memory|CUDA error: out of memory)")
_NCCL_RE = re.compile(r"Watchdog caught collective operation timeout: (WorkNCCL\([^)]*\))?")
_ERROR_RE = re.compile(r"^(?:\S+: )?([A-Za-z_.]*(?:Error|Exception)): (.+)$", re.MULTILINE)
_NUMBER = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_LIST_RE = re.compile(r"train_step_timing in s: \[([^\]]*)\]")
_BRIDGE_RE = re.compile(rf"Step Time\s*:\s*{_NUMBER}\s*s.*?GPU utilization:\s*{_NUMBER}\s*(?:MODEL_)?TFLOP/s/GPU", re.I)
_ITER_RE = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MEM_RE = re.compile(rf"memory \(MB\).*?\| max allocated: {_NUMBER}")


@dataclass
class Step:
    """One logged training step; None: the line did not say."""

    step: int | None
    time_s: float
    tflops_per_gpu: float | None = None
    loss: float | None = None
    peak_memory_bytes: float | None = None
    global_batch_size: float | None = None


def _fields(line: str) -> dict[str, str]:
    """``key: value`` cells of a ``|``-separated progress line."""
    cells = (cell.strip() for cell in line.split("|"))
    return {k.strip(): v.strip() for k, _, v in (c.rpartition(": ") for c in cells) if k}


def _number(text: str | None) -> float | None:
    try:
        return None if text is None else float(text.split()[0])
    except (ValueError, IndexError):
        return None


def nemo_steps(text: str) -> list[Step]:
    """Every NeMo progress line with a ``train_step_timing in s`` (list form: one step per element)."""
    steps: list[Step] = []
    for line in text.splitlines():
        if "train_step_timing in s" not in line:
            continue
        listed = _LIST_RE.search(line)
        if listed:
            times = [_number(v) for v in listed.group(1).split(",")]
            steps += [Step(None, t) for t in times if t is not None]
            continue
        cells = _fields(line)
        time_s = _number(cells.get("train_step_timing in s"))
        if time_s is None:
            continue
        step = _number(cells.get("global_step"))
        steps.append(
            Step(
                None if step is None else int(step),
                time_s,
                _number(cells.get("TFLOPS_per_GPU")),
                _number(cells.get("reduced_train_loss")),
                _number(cells.get("peak_memory_usage")),
                _number(cells.get("global_batch_size")),
            )
        )
    return steps


def megatron_steps(text: str) -> list[Step]:
    """Megatron iteration lines (time, TFLOP/s, loss), else Megatron-Bridge's ``Step Time`` lines; the last
    ``max allocated`` memory report is the peak of every step."""
    steps: list[Step] = []
    bridge: list[Step] = []
    peak: float | None = None
    for line in text.splitlines():
        if (it := _ITER_RE.search(line)) and "elapsed time per iteration (ms)" in line:
            cells = _fields(line)
            ms = _number(cells.get("elapsed time per iteration (ms)"))
            if ms is not None:
                tflops = _number(cells.get("throughput per GPU (TFLOP/s/GPU)"))
                gbs = _number(cells.get("global batch size"))
                steps.append(Step(int(it.group(1)), ms / 1000, tflops, _number(cells.get("lm loss")), None, gbs))
        elif m := _BRIDGE_RE.search(line):
            bridge.append(Step(None, float(m.group(1)), float(m.group(2))))
        elif m := _MEM_RE.search(line):
            peak = max(peak or 0.0, float(m.group(1)) * 2**20)
    found = steps or bridge
    if found and peak is not None:
        found[-1].peak_memory_bytes = peak
    return found


def bridge_steps(text: str) -> list[Step]:
    """Megatron-Bridge's ``Step Time : 11.59s GPU utilization: 640.3MODEL_TFLOP/s/GPU`` lines only (CloudAI's source
    for MegatronBridge's ``default``)."""
    return [Step(None, float(m.group(1)), float(m.group(2))) for m in _BRIDGE_RE.finditer(text)]


def fatal(text: str) -> str | None:
    """A failure no finished run prints: CUDA out of memory (what the agent must learn), an NCCL watchdog timeout."""
    if _OOM_RE.search(text):
        return OOM
    if m := _NCCL_RE.search(text):
        return f"NCCL timeout: {m.group(1) or 'collective operation timed out'}"
    return None


def problem(text: str) -> str | None:
    """Why a failed job died, from its output: ``fatal``'s reason, else the last Python exception line (a finished
    run may log caught ones, so only a failed job's is a reason); None when none of them is there."""
    if (reason := fatal(text)) is not None:
        return reason
    errors = _ERROR_RE.findall(text)
    return f"{errors[-1][0]}: {errors[-1][1].strip()}"[:200] if errors else None


def after_warmup(steps: list[Step]) -> list[Step]:
    """The steps a steady-state figure uses: all but the first tenth (at least one step) when there are two or more;
    the first steps of a training job compile, allocate and warm the NCCL rings."""
    if len(steps) < 2:
        return steps
    return steps[max(1, len(steps) // 10) :]


def summary(steps: list[Step], seq_length: int | None = None) -> dict[str, float]:
    """``step_time_s`` (median after warm-up), ``tflops_per_gpu`` (median of the same steps, when logged),
    ``tokens_per_s`` (global batch x ``seq_length`` / step time, when both are known), ``peak_memory_gb`` (the
    largest logged, 10^9 bytes) and ``loss`` (the last logged)."""
    if not steps:
        return {}
    steady = after_warmup(steps)
    step_time = statistics.median(s.time_s for s in steady)
    values = {"step_time_s": step_time}
    if tflops := _present(s.tflops_per_gpu for s in steady):
        values["tflops_per_gpu"] = statistics.median(tflops)
    gbs = _present(s.global_batch_size for s in steady)
    if gbs and seq_length and step_time > 0:
        values["tokens_per_s"] = gbs[-1] * seq_length / step_time
    if memory := _present(s.peak_memory_bytes for s in steps):
        values["peak_memory_gb"] = max(memory) / 1e9
    if losses := _present(s.loss for s in steps):
        values["loss"] = losses[-1]
    return values


def _present(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]
