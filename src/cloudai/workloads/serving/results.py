"""Results of a serving benchmark client (``vllm bench serve``, ``python3 -m sglang.bench_serving``).

Both clients print the same block on stdout and save the same numbers as JSON (vLLM: one object in
``--result-filename``; SGLang: one JSON line per run appended to ``--output-file``)::

    ============ Serving Benchmark Result ============
    Successful requests:                     30
    Request throughput (req/s):              12.82
    Output token throughput (tok/s):         1641.03
    ---------------Time to First Token----------------
    Mean TTFT (ms):                          25.47
    ...
    ==================================================

The JSON file is read first (every number, unrounded); the block in the client's log is the fallback. Metric
names are the JSON keys (``output_throughput``, ``p99_ttft_ms``, ...; SGLang's ``*_e2e_latency_ms`` read as
vLLM's ``*_e2el_ms``) plus CloudAI's ``throughput``, ``tps-per-user`` (throughput / max concurrency),
``tps-per-gpu`` (throughput / the job's GPUs) and ``default`` (= CloudAI's throughput, which the workload picks).

A run is usable only when every request succeeded: no successful request, or any failed one (a server that
drops or errors requests, e.g. out of memory on long prompts), fails the trial with the count and the client's
first error — its latencies would describe only the requests that survived. A block cut short (no closing
``=====`` line) is a truncated run, also a failure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudai.errors import WorkloadError
from cloudai.readfile import read_ends

GPUS_FILE = "cloudai-serving-gpus.txt"  # written by the job's first step: GPUs it serves with, for tps-per-gpu
_LATENCY = tuple(f"{stat}_{kind}_ms" for kind in ("ttft", "tpot", "itl", "e2el") for stat in ("mean", "median", "p99"))
_THROUGHPUT = ("output_throughput", "request_throughput", "total_token_throughput")
SERVING_METRICS: tuple[str, ...] = (
    "default", "throughput", "tps-per-user", "tps-per-gpu", "accuracy", *_THROUGHPUT, *_LATENCY,
    "completed", "duration",
)  # fmt: skip
SERVING_UNITS: dict[str, str] = {
    "output_throughput": "tok/s",
    "request_throughput": "req/s",
    "total_token_throughput": "tok/s",
    "duration": "s",
    **dict.fromkeys(_LATENCY, "ms"),
}
BEGIN = "============ Serving Benchmark Result ============"
_RENAMED = {"e2e_latency_ms": "e2el_ms", "total_throughput": "total_token_throughput"}
_LABELS = {
    "successful requests": "completed",
    "failed requests": "failed",
    "maximum request concurrency": "max_concurrency",
    "max request concurrency": "max_concurrency",
    "benchmark duration (s)": "duration",
    "request throughput (req/s)": "request_throughput",
    "output token throughput (tok/s)": "output_throughput",
    "total token throughput (tok/s)": "total_token_throughput",
    "total throughput (tok/s)": "total_token_throughput",
}
_STAT = re.compile(r"(mean|median|p\d+) (ttft|tpot|itl|e2el|e2e latency) \(ms\)")
_MAX_BYTES = 4 << 20


@dataclass
class BenchResult:
    """One client run: its numbers by metric name, and the requests that failed."""

    values: dict[str, float]
    requests: int | None = None  # how many were sent, when the output says
    errors: list[str] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return int(self.values.get("completed", 0))

    @property
    def failed(self) -> int:
        if "failed" in self.values:
            return int(self.values["failed"])
        return max(0, self.requests - self.completed) if self.requests is not None else 0


def from_json(data: Any, source: str) -> BenchResult:
    """A result object (vLLM's JSON file, one line of SGLang's JSONL)."""
    if not isinstance(data, dict):
        raise WorkloadError(f"{source} holds no result object")
    values: dict[str, float] = {}
    for key, value in data.items():
        name = _renamed(str(key))
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            values[name] = float(value)
    requests = data.get("num_prompts")
    if not isinstance(requests, int) and isinstance(data.get("input_lens"), list):
        requests = len(data["input_lens"])
    errors = [str(e).strip() for e in data.get("errors") or [] if isinstance(e, str) and e.strip()]
    if "completed" not in values:
        raise WorkloadError(f"{source} has no 'completed' count: not a serving benchmark result")
    return BenchResult(values, requests if isinstance(requests, int) else None, errors)


def from_block(text: str, source: str) -> BenchResult:
    """The result block a client prints (the last one, when the log holds several)."""
    start = text.rfind(BEGIN)
    if start < 0:
        raise WorkloadError(f"{source} has no '{BEGIN.strip('= ')}' block: the benchmark did not finish")
    lines = text[start + len(BEGIN) :].splitlines()[1:]
    end = next((i for i, line in enumerate(lines) if line.startswith("=====")), None)
    if end is None:
        raise WorkloadError(f"{source}: the result block is truncated (no closing line): the run was cut short")
    values: dict[str, float] = {}
    for line in lines[:end]:
        label, _, value = line.partition(":")
        name = _label_name(label.strip().lower())
        number = _number(value)
        if name and number is not None:
            values[name] = number
    if "completed" not in values:
        raise WorkloadError(f"{source}: the result block has no 'Successful requests' line")
    return BenchResult(values)


def verdict(result: BenchResult) -> str | None:
    """Why the run cannot be used (see the module docstring), or None."""
    if result.completed <= 0:
        return f"no request succeeded{_first(result.errors)}"
    if result.failed > 0:
        total = result.requests or result.completed + result.failed
        return f"{result.failed} of {total} requests failed{_first(result.errors)}"
    return None


def serving_metrics(result: BenchResult, default: str, job_dir: Path) -> dict[str, float]:
    """The metrics of a usable run; ``default`` (and ``throughput``) is ``result.values[default]``."""
    problem = verdict(result)
    if problem:
        raise WorkloadError(problem)
    if default not in result.values:
        raise WorkloadError(f"the benchmark result has no {default}")
    metrics = {k: v for k, v in result.values.items() if k in SERVING_METRICS}
    throughput = result.values[default]
    metrics["default"] = metrics["throughput"] = throughput
    concurrency = result.values.get("max_concurrency", 0)
    if concurrency > 0:
        metrics["tps-per-user"] = throughput / concurrency
    gpus = _gpus(job_dir)
    if gpus:
        metrics["tps-per-gpu"] = throughput / gpus
    return metrics


def read_text(path: Path) -> str | None:
    """A result file's text (its last 4 MiB: a log may be long), None when it is not there."""
    try:
        data, _ = read_ends(path, 0, _MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WorkloadError(f"{path.name} refused: {exc}") from None
    return data.decode(errors="replace")


def last_json_line(text: str, source: str) -> Any:
    """The last complete JSON line of a JSONL file (a torn last line is skipped)."""
    for line in reversed(text.splitlines()):
        if line.strip():
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise WorkloadError(f"{source} holds no complete JSON line")


def last_error_line(logs: Sequence[Path]) -> str | None:
    """The last line that reads like an error in the first of ``logs`` that has one."""
    pattern = re.compile(r"(Error|error:|ERROR|Traceback|failed)")
    for path in logs:
        text = read_text(path)
        hits = [line.strip() for line in (text or "").splitlines() if pattern.search(line)]
        if hits:
            return f"{path.name}: {hits[-1][:300]}"
    return None


def accuracy(text: str | None, labels: str = "Accuracy") -> float | None:
    """``Accuracy: 0.91`` (or another label of ``labels``, ``|``-separated) from an evaluation's output."""
    match = re.search(rf"\b(?:{labels}):\s*([0-9]*\.?[0-9]+)", text or "")
    return float(match.group(1)) if match else None


def _renamed(key: str) -> str:
    for old, new in _RENAMED.items():
        if key.endswith(old):
            return key[: -len(old)] + new
    return key


def _label_name(label: str) -> str | None:
    if label in _LABELS:
        return _LABELS[label]
    match = _STAT.fullmatch(label)
    if match:
        kind = "e2el" if match.group(2) == "e2e latency" else match.group(2)
        return f"{match.group(1)}_{kind}_ms"
    return None


def _number(text: str) -> float | None:
    try:
        value = float(text.split()[0]) if text.split() else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _first(errors: Sequence[str]) -> str:
    """The first error's last line (a traceback ends with the exception), one line for a trial's reason."""
    return f"; first error: {errors[0].splitlines()[-1].strip()[:200]}" if errors else ""


def _gpus(job_dir: Path) -> int:
    try:
        return int((job_dir / GPUS_FILE).read_text().strip())
    except (OSError, ValueError):
        return 0
