"""Bounded reads of what a job or a user left (issue 29 items 3 and 7): memory to parse a flooded nccl-tests output,
time to refuse a 10^7-node host list.

    uv run python benchmarks/bench_untrusted_input.py [--gib 1.0] [--dir /tmp]

1. A stand-in nccl-tests output: ``--gib`` GiB of ``NCCL_DEBUG=INFO`` lines, then the real tool's results table
   (tests/workloads/data/nccl_all_reduce.txt). Parsed in a fresh process each way, its peak RSS reported:
   the baseline reads the whole file and parses it (what ``read_stdout`` did before), ours is
   ``NcclTest().read_metrics``. Both must find the same metrics.
2. ``nodes = ["n[0-9999999]"]``: ours counts the names and refuses the list (``check_hostlist``); the baseline
   expands a tenth of it (10^6 names) as the old loader expanded all of it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "tests" / "workloads" / "data" / "nccl_all_reduce.txt"
LINE = b"vm:1234:1234 [0] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14\n"

BASELINE = """
import json, resource, sys
from pathlib import Path
from cloudai.workloads.nccl_test import parse
text = (Path(sys.argv[1]) / "stdout.txt").read_text(errors="replace")
result = parse.parse(text)
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "avg_busbw": result.avg_busbw, "rows": len(result.rows)}))
"""
OURS = """
import json, resource, sys
from pathlib import Path
from cloudai.workloads.nccl_test import parse
from cloudai.workloads.base import read_stdout
result = parse.parse(read_stdout(Path(sys.argv[1]), "nccl-tests"))
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "avg_busbw": result.avg_busbw, "rows": len(result.rows)}))
"""


def flood(job: Path, gib: float) -> int:
    block = LINE * (1 << 20 // len(LINE) + 1)
    target = int(gib * (1 << 30))
    with (job / "stdout.txt").open("wb") as out:
        written = 0
        while written < target:
            written += out.write(block)
        out.write(TABLE.read_bytes())
    return (job / "stdout.txt").stat().st_size


def parse_in_child(code: str, job: Path) -> tuple[dict[str, float], float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, str(job)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--dir", default=None, help="where the flooded output is written (default: the temp dir)")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=ns.dir) as tmp:
        job = Path(tmp)
        size = flood(job, ns.gib)
        base, base_s = parse_in_child(BASELINE, job)
        ours, ours_s = parse_in_child(OURS, job)
    assert (ours["avg_busbw"], ours["rows"]) == (base["avg_busbw"], base["rows"]), (ours, base)
    print(f"flooded output: {size / (1 << 20):.0f} MiB, the same table found both ways ({ours['rows']} rows)")
    ratio = base["rss_mb"] / ours["rss_mb"]
    print(f"  peak RSS: whole-file read {base['rss_mb']:.0f} MB ({base_s:.2f} s), "
          f"bounded read {ours['rss_mb']:.0f} MB ({ours_s:.2f} s): {ratio:.1f}x less")  # fmt: skip

    from cloudai.config.hostlist import HostlistError, check_hostlist, expand_hostlist

    start = time.perf_counter()
    try:
        check_hostlist("n[0-9999999]")
    except HostlistError as exc:
        refused_s = time.perf_counter() - start
        print(f"host list n[0-9999999]: refused in {refused_s * 1e6:.0f} us ({exc})")
    start = time.perf_counter()
    names = [f"n{i}" for i in range(1_000_000)]  # what the old loader built, a tenth of it
    expand_s = time.perf_counter() - start
    assert len(expand_hostlist("n[0-99999]")) == 100_000 and len(names) == 1_000_000
    print(f"  baseline: building 10^6 of its names took {expand_s:.2f} s ({expand_s / refused_s:.0f}x the refusal)")


if __name__ == "__main__":
    main()
