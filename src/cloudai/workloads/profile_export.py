"""The LLM benchmark clients' profile exports, read into the metrics a serving tuner wants.

genai-perf (``profile_export_genai_perf.csv``) and aiperf (``profile_export_aiperf.csv``, which CloudAI copies
to ``aiperf_report.csv``) write the same shape: sections separated by blank lines, each headed by a row whose
first cell is ``Metric``::

    Metric,avg,min,max,p99,p95,p90,p75,p50,p25                 (genai-perf; aiperf adds p1..p10 and std)
    Time To First Token (ms),412.5,...                          (aiperf: "Time to First Token (ms)")
    Inter Token Latency (ms),8.1,...
    Request Latency (ms),1432.0,...

    Metric,Value
    Output Token Throughput (per sec),1280.4                    (aiperf: "... (tokens/sec)")
    Request Throughput (per sec),9.6                            (aiperf: "... (requests/sec)")
    Request Count (count),100                                   (aiperf: "Request Count")
    Error Request Count,3                                       (aiperf, when requests failed)

aiperf's GPU telemetry section has columns before ``Metric`` (``Endpoint,GPU_Index,...``) and is skipped.
Used by every workload whose client is genai-perf or aiperf (AIDynamo, TritonInference, DynamoMocker).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from pathlib import Path

from cloudai.errors import WorkloadError
from cloudai.readfile import UnsafeFileError, read_regular
from cloudai.workloads.base import LatencyCharts
from cloudai.workloads.table import number

MAX_EXPORT_BYTES = 4 << 20
Rows = dict[str, dict[str, float]]  # metric name -> column (avg, p50, Value, ...) -> number

_TTFT = ("Time To First Token (ms)", "Time to First Token (ms)")
_ITL = ("Inter Token Latency (ms)",)
_LATENCY = ("Request Latency (ms)",)
_OUTPUT_TPUT = ("Output Token Throughput (tokens/sec)", "Output Token Throughput (per sec)")
_REQUEST_TPUT = ("Request Throughput (requests/sec)", "Request Throughput (per sec)")
_COUNT = ("Request Count", "Request Count (count)", "Request Count (requests)")
_ERRORS = ("Error Request Count", "Error Request Count (requests)")

METRICS = (
    "default",
    "output_token_throughput",
    "request_throughput",
    "ttft_ms",
    "ttft_p50_ms",
    "ttft_p90_ms",
    "ttft_p99_ms",
    "itl_ms",
    "itl_p50_ms",
    "itl_p90_ms",
    "itl_p99_ms",
    "request_latency_ms",
    "request_latency_p99_ms",
    "request_count",
)
UNITS = {
    "default": "tokens/s",
    "output_token_throughput": "tokens/s",
    "request_throughput": "requests/s",
    **{name: "ms" for name in METRICS if name.endswith("_ms")},
}
# TTFT and ITL against output tokens/s in the report (the SLA's statistic when the test constrains one)
LATENCY_CHARTS = LatencyCharts(
    "output_token_throughput",
    (("ttft_ms", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms"), ("itl_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms")),
)
# name -> (rows it may be in, columns to try in order)
_PICKS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "output_token_throughput": (_OUTPUT_TPUT, ("Value", "avg")),
    "request_throughput": (_REQUEST_TPUT, ("Value", "avg")),
    "ttft_ms": (_TTFT, ("avg",)),
    "ttft_p50_ms": (_TTFT, ("p50",)),
    "ttft_p90_ms": (_TTFT, ("p90",)),
    "ttft_p99_ms": (_TTFT, ("p99",)),
    "itl_ms": (_ITL, ("avg",)),
    "itl_p50_ms": (_ITL, ("p50",)),
    "itl_p90_ms": (_ITL, ("p90",)),
    "itl_p99_ms": (_ITL, ("p99",)),
    "request_latency_ms": (_LATENCY, ("avg",)),
    "request_latency_p99_ms": (_LATENCY, ("p99",)),
    "request_count": (_COUNT, ("Value", "avg")),
}


def parse(text: str) -> Rows:
    """Every ``Metric``-keyed row of every section; cells that are not numbers are left out."""
    rows: Rows = {}
    header: list[str] | None = None
    for row in csv.reader(io.StringIO(text)):
        cells = [cell.strip() for cell in row]
        if not any(cells):
            header = None
            continue
        if cells[0] == "Metric":
            header = cells
        elif header is not None:
            values = {col: number(cell.replace(",", "")) for col, cell in zip(header[1:], cells[1:], strict=False)}
            rows[cells[0]] = {col: v for col, v in values.items() if math.isfinite(v)}
    return rows


def pick(rows: Mapping[str, Mapping[str, float]], names: tuple[str, ...], columns: tuple[str, ...]) -> float | None:
    for name in names:
        for column in columns:
            value = rows.get(name, {}).get(column)
            if value is not None:
                return value
    return None


def metrics(rows: Rows) -> dict[str, float]:
    """The named metrics found; ``default`` is the output token throughput (tokens/s), what CloudAI's serving
    report calls the throughput of a run."""
    found = {name: pick(rows, names, columns) for name, (names, columns) in _PICKS.items()}
    out = {name: value for name, value in found.items() if value is not None}
    if "output_token_throughput" in out:
        out = {"default": out["output_token_throughput"], **out}
    return out


def verdict(rows: Rows, source: str) -> str | None:
    """Why these rows are no result (a truncated export, failed requests), or None."""
    errors = pick(rows, _ERRORS, ("Value", "avg")) or 0
    count = pick(rows, _COUNT, ("Value", "avg"))
    if errors > 0:
        total = f" of {count + errors:.0f}" if count is not None else ""
        return f"{source}: {errors:.0f}{total} requests failed (Error Request Count)"
    missing = [what for what, names in (("TTFT", _TTFT), ("output token throughput", _OUTPUT_TPUT)) if not
               any(name in rows for name in names)]  # fmt: skip
    if missing:
        return f"{source} holds no {' and no '.join(missing)}: the benchmark client stopped early (truncated export)"
    return None


def read_profile(path: Path, tool: str) -> dict[str, float]:
    """The metrics of one export file; ``WorkloadError`` naming ``tool`` when it is missing or no result."""
    try:
        text = read_regular(path, MAX_EXPORT_BYTES).decode(errors="replace")
    except FileNotFoundError:
        raise WorkloadError(f"no {path.name} was written: {tool} did not finish") from None
    except (OSError, UnsafeFileError) as exc:
        raise WorkloadError(f"{path.name} refused: {exc}") from None
    rows = parse(text)
    problem = verdict(rows, path.name)
    if problem:
        raise WorkloadError(problem)
    return metrics(rows)


def find_export(job_dir: Path, name: str) -> Path:
    """``job_dir/name``, else the first ``name`` below it (genai-perf nests its artifacts one level down)."""
    direct = job_dir / name
    if direct.exists():
        return direct
    return next(iter(sorted(job_dir.rglob(name))), direct)
