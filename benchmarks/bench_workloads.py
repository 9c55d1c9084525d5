"""Parse time of the workloads' output parsers (aim: < 50 ms each), against a bare baseline, and what the
shipped fio DSE example gains over fio's defaults.

    uv run python benchmarks/bench_workloads.py [--rows N] [--repeat R] [--parse-only]

One function per measurement; each returns a ``Measurement`` and ``main`` prints them all. The
baseline is measured in the same process on the same text: a bare ``str.split`` of every line
(the least any parser of the table must do), so the ratio says what the parsing itself costs.
Times are medians of ``--repeat`` runs, in CPU seconds of this process (``time.process_time``:
steadier than wall time on a machine other jobs share); wall time is printed beside them.

* ``nccl_parse``: a 10 000-row nccl-tests table (``parse`` + ``verdict`` + ``metrics``).
* ``nccl_read_metrics``: the same through ``NcclTest.read_metrics`` on a job dir (reads
  ``stdout.txt``, writes ``nccl.csv`` and ``metrics.json``): what a finished trial costs.
* ``fio_parse``: a 64-job fio JSON output (real fio 3.33 jobs from the test samples), parse + metrics,
  against a bare ``json.loads`` of the same text.
* fio DSE (skipped with ``--parse-only`` or without fio): ``conf/common/test/dse_fio.toml`` run as shipped
  (Optuna, 16 real fio trials), then its best.toml and the same test at fio's defaults (bs=4k,
  ioengine=psync, iodepth=1, numjobs=1), each 3 times one after the other: median read bandwidth (MiB/s)
  of each and the ratio.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import toml

from cloudai.workloads.fio.results import metrics as fio_metrics
from cloudai.workloads.fio.results import parse as fio_parse
from cloudai.workloads.nccl_test import NcclTest
from cloudai.workloads.nccl_test import parse as nccl_parse

AIM_S = 0.050
ROOT = Path(__file__).resolve().parents[1]
FIO_SAMPLE = ROOT / "tests" / "workloads" / "fio_json" / "three_jobs_read.json"
TESTS = ROOT / "conf" / "common" / "test"
FIO_JOBS = 64
FIO_REPEATS = 3
FIO_DEFAULTS = {"bs": "4k", "ioengine": "psync", "iodepth": 1, "numjobs": 1}
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
    baseline_name: str = "line split"

    @property
    def seconds(self) -> float:
        return self.timing.cpu_s

    def line(self) -> str:
        verdict = "ok" if self.seconds < AIM_S else f"over the {AIM_S * 1e3:.0f} ms aim"
        return (
            f"{self.name:<24} cpu {self.seconds * 1e3:7.2f} ms (wall {self.timing.wall_s * 1e3:7.2f})"
            f"   baseline ({self.baseline_name}) cpu {self.baseline.cpu_s * 1e3:6.2f} ms"
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


def sixty_four_jobs() -> str:
    data = json.loads(FIO_SAMPLE.read_text())
    jobs = data["jobs"]
    data["jobs"] = [{**jobs[i % len(jobs)], "jobname": f"job{i}"} for i in range(FIO_JOBS)]
    return json.dumps(data, indent=2)


def fio_parse_measurement(repeat: int) -> Measurement:
    text = sixty_four_jobs()
    ours = timed(lambda: fio_metrics(fio_parse(text)), repeat)
    bare = timed(lambda: json.loads(text), repeat)
    return Measurement(f"fio_parse ({FIO_JOBS} jobs)", ours, bare, "json.loads")


def _invoke(args: list[str]) -> None:
    from click.testing import CliRunner

    from cloudai.cli import cli

    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"cloudai {' '.join(args)} failed:\n{result.output}")


def fio_dse_best_vs_default(root: Path) -> None:
    scenario = ROOT / "conf" / "common" / "test_scenario" / "dse_fio.toml"
    start = time.perf_counter()
    _invoke(["run", "--tests-dir", str(TESTS), "--test-scenario", str(scenario), "--output-dir", str(root / "dse")])
    dse_s = time.perf_counter() - start
    (best_file,) = (root / "dse").glob("*/fio/0/best.toml")

    tests = root / "tests"
    tests.mkdir()
    best = toml.loads(best_file.read_text())
    default = toml.loads((TESTS / "dse_fio.toml").read_text())
    for key in [k for k in default if k.startswith("agent")]:
        del default[key]
    default.update(name="fio_defaults", description="dse_fio at fio's defaults")
    default["cmd_args"]["args"].update(FIO_DEFAULTS)
    (tests / "best.toml").write_text(toml.dumps(best))
    (tests / "default.toml").write_text(toml.dumps(default))
    entries = "".join(
        f'[[Tests]]\nid = "{name}"\ntest_name = "{test}"\niterations = {FIO_REPEATS}\n'
        for name, test in (("default", "fio_defaults"), ("best", best["name"]))
    )
    (root / "s.toml").write_text(f'name = "fio-best-vs-default"\n{entries}')
    (root / "system.toml").write_text('name = "one"\nscheduler = "standalone"\nmax_concurrent_jobs = 1\n')
    _invoke(["run", "--system-config", str(root / "system.toml"), "--tests-dir", str(tests),
             "--test-scenario", str(root / "s.toml"), "--output-dir", str(root / "cmp")])  # fmt: skip

    def median_bw(test_id: str) -> float:
        jobs = [json.loads(p.read_text()) for p in (root / "cmp").glob(f"*/{test_id}/*/job.json")]
        return statistics.median(j["metrics"]["default"] for j in jobs)

    base, tuned = median_bw("default"), median_bw("best")
    knobs = {k: best["cmd_args"]["args"][k] for k in FIO_DEFAULTS}
    print(f"fio DSE example: 16 trials in {dse_s:.1f} s; best {knobs}")
    print(f"  read bandwidth, median of {FIO_REPEATS}: fio defaults {base:.0f} MiB/s, best {tuned:.0f} MiB/s, "
          f"ratio {tuned / base:.1f}x")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--parse-only", action="store_true", help="skip the fio DSE (16 real fio trials)")
    args = parser.parse_args(argv)
    measurements = [
        nccl_parse_measurement(args.rows, args.repeat),
        nccl_read_metrics_measurement(args.rows, args.repeat),
        fio_parse_measurement(args.repeat),
    ]
    for m in measurements:
        print(m.line())
    if args.parse_only or shutil.which("fio") is None:
        print("fio DSE: skipped" + ("" if args.parse_only else " (fio not found: apt-get install fio)"))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            fio_dse_best_vs_default(Path(tmp))
    return 0 if all(m.seconds < AIM_S for m in measurements) else 1


if __name__ == "__main__":
    sys.exit(main())
