"""DSE benchmarks (issue 4): orchestration overhead, parallel speed-up, dry-run of a 10^6-point grid.

    uv run python benchmarks/bench_dse.py [--quick]

1. Overhead per step: ``cloudai run`` of a 200-step grid of ``Synthetic`` with duration 0,
   minus the same 200 workload commands (argv from each trial's job.json) run bare, one
   after another, divided by 200. Aim < 20 ms/step. On a busy machine the two runs see
   different load, so the same run's wall time outside its jobs (``job.json`` start/end)
   is printed too: it is the orchestration cost measured under one load.
2. Parallel: 32 trials of duration 1 s with ``max_parallel = 4`` vs ``1``. Aim >= 3.5x.
3. Dry-run of a 10^6-point grid: wall time and the child's max RSS. Aim < 10 s, < 150 MB.

Every run is the real CLI in a subprocess (its ~0.5 s start-up is included: it is what a
user waits for). Falls back to a ``BashCmd`` sleep when ``Synthetic`` is not installed.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cloudai.workloads import WORKLOADS


def _has_synthetic() -> bool:
    try:
        WORKLOADS.get("Synthetic")
    except Exception:
        return False
    return True


def _test_toml(points: int, duration: float, parallel: int) -> str:
    """A grid of ``points`` trials (``points`` a multiple of 20 or 8) taking ``duration`` seconds each."""
    header = f'name = "bench"\nagent_config = {{ max_parallel = {parallel} }}\n'
    inner = 20 if points % 20 == 0 else 8
    grid = f"a = {list(range(points // inner))}\nb = {list(range(inner))}\n"
    if _has_synthetic():
        return (
            header
            + f'test_template_name = "Synthetic"\n[cmd_args]\nduration_s = {duration}\n'
            + _synthetic_grid(points // inner, inner)
        )
    cmd = f"sleep {duration}; echo '{{\\\"default\\\": 1}}' > metrics.json; true"
    return header + f'test_template_name = "BashCmd"\n[cmd_args]\ncmd = "{cmd}"\n' + grid


def _synthetic_grid(outer: int, inner: int) -> str:
    """Feasible points only (chunk_kb * num_channels within the 64 MiB buffer): every trial is a job."""
    return f"num_channels = {list(range(1, outer + 1))}\nchunk_kb = {[64 + 16 * i for i in range(inner)]}\n"


def _run(root: Path, test: str, command: str = "run") -> tuple[float, Path, subprocess.CompletedProcess[str]]:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "tests" / "bench.toml").write_text(test)
    (root / "s.toml").write_text('name = "bench"\n[[Tests]]\nid = "t"\ntest_name = "bench"\n')
    args = [sys.executable, "-m", "cloudai", command, "--tests-dir", str(root / "tests"),
            "--test-scenario", str(root / "s.toml"), "--output-dir", str(root / "out")]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"cloudai {command} failed:\n{done.stdout}\n{done.stderr}")
    (run_dir,) = (root / "out").iterdir()
    return elapsed, run_dir, done


def overhead(steps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dse_s, run_dir, _ = _run(root, _test_toml(steps, 0, 1))
        records = [json.loads(p.read_text()) for p in sorted((run_dir / "t" / "0").glob("*/job.json"))]
        argvs = [r["argv"] for r in records]
        in_jobs = sum(r["ended_at"] - r["started_at"] for r in records)
        scratch = root / "bare"
        scratch.mkdir()
        start = time.perf_counter()
        for argv in argvs:
            subprocess.run(argv, cwd=scratch, check=True, capture_output=True)
        bare_s = time.perf_counter() - start
    per_step = (dse_s - bare_s) / steps * 1000
    gap = (dse_s - in_jobs) / steps * 1000
    print(f"1. overhead: {steps} steps in {dse_s:.2f} s via cloudai, {bare_s:.2f} s bare -> {per_step:.1f} ms/step")
    print(f"   same run, wall time outside the jobs (start-up included): {gap:.1f} ms/step")


def parallel(trials: int) -> None:
    times = {}
    for p in (1, 4):
        with tempfile.TemporaryDirectory() as tmp:
            times[p], _, _ = _run(Path(tmp), _test_toml(trials, 1, p))
    print(f"2. parallel: {trials} x 1 s trials: max_parallel 1 {times[1]:.2f} s, 4 {times[4]:.2f} s "
          f"-> {times[1] / times[4]:.2f}x")  # fmt: skip


def dry_run() -> None:
    test = 'name = "bench"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "echo"\n'
    test += "".join(f"k{i} = {list(range(10))}\n" for i in range(6))
    with tempfile.TemporaryDirectory() as tmp:
        wall, _, done = _run(Path(tmp), test, "dry-run")
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert "1000000 grid points" in done.stdout, done.stdout
    print(f"3. dry-run of a 10^6-point grid: {wall:.2f} s, max RSS {rss_mb:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description="DSE benchmarks: overhead, parallel speed-up, dry-run.")
    parser.add_argument("--quick", action="store_true", help="40 steps and 8 trials instead of 200 and 32")
    quick = parser.parse_args().quick
    print(f"workload: {'Synthetic' if _has_synthetic() else 'BashCmd (Synthetic not installed)'}")
    dry_run()  # first: RUSAGE_CHILDREN is a max over every child so far
    overhead(40 if quick else 200)
    parallel(8 if quick else 32)


if __name__ == "__main__":
    main()
