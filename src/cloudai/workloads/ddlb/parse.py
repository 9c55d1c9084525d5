"""DDLB's results table: after a ``Benchmark Results:`` line, rank 0 prints a pandas frame::

    Benchmark Results:
          m    n     k                                     config  Throughput (TFLOPS)  Throughput std (TFLOPS)  mean_time (ms)  std_time  min_time  max_time
    0  1024  128  1024  pytorch_0 (backend=nccl, order=AG_before)            12.345678                 0.123456        0.021745  0.000210  0.021500  0.022300

A data row is the frame's index, ``m``, ``n``, ``k`` (integers), the configuration label (which may hold spaces)
and six numbers; it is read from both ends. Contract: ``parse(text)`` never raises; ``verdict(rows, text)`` says
why a run must count as failed (CloudAI's rule: an ``Error`` line; no results table) or None.
"""  # noqa: E501

from __future__ import annotations

from cloudai.workloads.table import complete, number

HEADER = "Benchmark Results"
COLUMNS = ("m", "n", "k", "config", "throughput_tflops", "throughput_std_tflops", "mean_time_ms", "std_time_ms",
           "min_time_ms", "max_time_ms")  # fmt: skip


def parse(text: str) -> list[list[object]]:
    """Every data row after the results header: ``[m, n, k, config, six floats]``."""
    rows: list[list[object]] = []
    _, found, table = text.partition(HEADER)
    if not found:
        return rows
    for line in table.splitlines():
        words = line.split()
        if len(words) < 11 or not all(w.isdigit() for w in words[:4]):
            continue
        values = [number(w) for w in words[-6:]]
        if complete(values):
            rows.append([int(words[1]), int(words[2]), int(words[3]), " ".join(words[4:-6]), *values])
    return rows


def verdict(rows: list[list[object]], text: str) -> str | None:
    for line in text.splitlines():
        if "Error" in line:
            return f"ddlb: {line.strip()[:200]}"
    if HEADER not in text:
        return f"ddlb printed no '{HEADER}' (the run did not finish; see stderr.txt)"
    if not rows:
        return f"ddlb's '{HEADER}' table has no complete row (cut short?)"
    return None


def metrics(rows: list[list[object]]) -> dict[str, float]:
    """``default``: the mean throughput (TFLOPS, higher is better) over the rows; the mean, min and max times."""
    count = len(rows)
    column = {name: [float(str(row[i])) for row in rows] for i, name in enumerate(COLUMNS) if i >= 4}
    return {
        "default": sum(column["throughput_tflops"]) / count,
        "throughput_tflops": sum(column["throughput_tflops"]) / count,
        "mean_time_ms": sum(column["mean_time_ms"]) / count,
        "min_time_ms": min(column["min_time_ms"]),
        "max_time_ms": max(column["max_time_ms"]),
    }
