"""Parse time of the workloads' output parsers (aim: < 50 ms each), against a bare baseline.

    uv run python benchmarks/bench_workloads.py [--rows N] [--repeat R]

One function per measurement; each returns a ``Measurement`` and ``main`` prints them all. The
baseline is measured in the same process on the same text: a bare ``str.split`` of every line
(the least any parser of the table must do), so the ratio says what the parsing itself costs.
Times are medians of ``--repeat`` runs, in CPU seconds of this process (``time.process_time``:
steadier than wall time on a machine other jobs share); wall time is printed beside them.

* ``nccl_parse``: a 10 000-row nccl-tests table (``parse`` + ``verdict`` + ``metrics``).
* ``nccl_read_metrics``: the same through ``NcclTest.read_metrics`` on a job dir (reads
  ``stdout.txt``, writes ``nccl.csv`` and ``metrics.json``): what a finished trial costs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cloudai.workloads.nccl_test import NcclTest
from cloudai.workloads.nccl_test import parse as nccl_parse

AIM_S = 0.050
TIME_COLUMNS = "     time   algbw   busbw #wrong"


@dataclass
class Timing:
    cpu_s: float  # median CPU seconds
    wall_s: float  # median wall seconds


@dataclass
class Measurement:
    name: str
    timing: Timing
    baseline: Timing

    @property
    def seconds(self) -> float:
        return self.timing.cpu_s

    def line(self) -> str:
        verdict = "ok" if self.seconds < AIM_S else f"over the {AIM_S * 1e3:.0f} ms aim"
        return (
            f"{self.name:<24} cpu {self.seconds * 1e3:7.2f} ms (wall {self.timing.wall_s * 1e3:7.2f})"
            f"   baseline (line split) cpu {self.baseline.cpu_s * 1e3:6.2f} ms"
            f"   ratio {self.seconds / self.baseline.cpu_s:5.1f}x   {verdict}"
        )


def timed(fn: Callable[[], object], repeat: int) -> Timing:
    cpu, wall = [], []
    for _ in range(repeat):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return Timing(statistics.median(cpu), statistics.median(wall))


def bare_split(text: str) -> int:
    return sum(len(line.split()) for line in text.splitlines())


def nccl_output(rows: int) -> str:
    """A nccl-tests all_reduce table of ``rows`` sizes (16 ranks), in the tool's format."""
    lines = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 80000 step: 8(bytes) warmup iters: 5 iters: 20", "#"]
    lines += [
        f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on node-001 device {r % 8:2d} [0x18] NVIDIA H100" for r in range(16)
    ]
    lines.append("#       size         count      type   redop    root" + TIME_COLUMNS * 2)
    busbw = []
    for i in range(rows):
        size = 8 * (i + 1)
        t1, t2 = 20.0 + size / 1e4, 19.5 + size / 1e4
        a1, a2 = size / t1 / 1e3, size / t2 / 1e3
        busbw += [a1 * 1.875, a2 * 1.875]
        lines.append(
            f"{size:>12} {size // 4:>13}     float     sum      -1 {t1:8.2f} {a1:7.2f} {a1 * 1.875:7.2f}      0"
            f" {t2:8.2f} {a2:7.2f} {a2 * 1.875:7.2f}      0"
        )
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {sum(busbw) / len(busbw):.4f}", "#"]
    return "\n".join(lines) + "\n"


def nccl_parse_measurement(rows: int, repeat: int) -> Measurement:
    text = nccl_output(rows)

    def parse_all() -> None:
        result = nccl_parse.parse(text)
        assert nccl_parse.verdict(result) is None and len(result.rows) == rows
        assert math.isfinite(nccl_parse.metrics(result)["default"])

    return Measurement(f"nccl_parse ({rows} rows)", timed(parse_all, repeat), timed(lambda: bare_split(text), repeat))


def nccl_read_metrics_measurement(rows: int, repeat: int) -> Measurement:
    text = nccl_output(rows)
    workload = NcclTest()
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp)
        (job / "stdout.txt").write_text(text)
        seconds = timed(lambda: workload.read_metrics(job), repeat)
        baseline = timed(lambda: bare_split((job / "stdout.txt").read_text()), repeat)
    return Measurement("nccl_read_metrics", seconds, baseline)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    measurements = [
        nccl_parse_measurement(args.rows, args.repeat),
        nccl_read_metrics_measurement(args.rows, args.repeat),
    ]
    for m in measurements:
        print(m.line())
    return 0 if all(m.seconds < AIM_S for m in measurements) else 1


if __name__ == "__main__":
    sys.exit(main())
