"""DSE benchmarks (issue 4): orchestration overhead, parallel speed-up, dry-run of a 10^6-point grid.

    uv run python benchmarks/bench_dse.py [--quick]

1. Overhead per step: ``cloudai run`` of a 200-step grid of ``Synthetic`` with duration 0,
   minus the same 200 workload commands (argv from each trial's job.json) run bare, one
   after another, divided by 200. Aim < 20 ms/step. A run also pays once for start-up,
   validation and the closing report: a 1-step run measures that, and it is shown both
   spread over the steps and taken out. On a busy machine the two runs see different
   load, so the same run's time between its jobs (``job.json`` start/end) is printed too.
2. Parallel: 32 trials of duration 1 s with ``max_parallel = 4`` vs ``1``. Aim >= 3.5x,
   on the sweep (first job start to last job end); the whole run's ratio, fixed costs
   included, is printed next to it.
3. Dry-run of a 10^6-point grid: wall time and the child's max RSS. Aim < 10 s, < 150 MB.

Every run is the real CLI in a subprocess (its start-up and closing report are included in
the whole-run numbers: they are what a user waits for).
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


def _test_toml(points: int, duration: float, parallel: int) -> str:
    """A grid of ``points`` trials (``points`` a multiple of 20 or 8) of Synthetic, ``duration`` seconds each."""
    inner = 20 if points % 20 == 0 else 8
    return (
        f'name = "bench"\nagent_config = {{ max_parallel = {parallel} }}\ntest_template_name = "Synthetic"\n'
        f"[cmd_args]\nduration_s = {duration}\n" + _synthetic_grid(points // inner, inner)
    )


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


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((run_dir / "t" / "0").glob("*/job.json"))]


def _span(records: list[dict]) -> float:
    """First job's start to last job's end: the sweep itself, without start-up and the closing report."""
    return max(r["ended_at"] for r in records) - min(r["started_at"] for r in records)


def overhead(steps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one_s, _, _ = _run(root / "one", _test_toml(20, 0, 1).replace("[cmd_args]", "agent_steps = 1\n[cmd_args]"))
        dse_s, run_dir, _ = _run(root / "many", _test_toml(steps, 0, 1))
        records = _records(run_dir)
        assert len(records) == steps, f"{len(records)} jobs for {steps} steps"
        scratch = root / "bare"
        scratch.mkdir()
        start = time.perf_counter()
        for record in records:
            subprocess.run(record["argv"], cwd=scratch, check=True, capture_output=True)
        bare_s = time.perf_counter() - start
    in_jobs = sum(r["ended_at"] - r["started_at"] for r in records)
    fixed = one_s - bare_s / steps  # start-up, validation, the closing report: paid once per run
    print(f"1. overhead: {steps} steps in {dse_s:.2f} s via cloudai, {bare_s:.2f} s bare; "
          f"a 1-step run takes {one_s:.2f} s ({fixed:.2f} s fixed: start-up + report)")  # fmt: skip
    print(f"   per step, whole run:                 {(dse_s - bare_s) / steps * 1000:6.1f} ms (fixed cost spread)")
    print(f"   per step, fixed cost taken out:      {(dse_s - fixed - bare_s) / steps * 1000:6.1f} ms (aim < 20)")
    print(f"   per step, between jobs in the sweep: {(_span(records) - in_jobs) / steps * 1000:6.1f} ms "
          "(job.json times: one load for both)")  # fmt: skip


def parallel(trials: int) -> None:
    wall, span = {}, {}
    for p in (1, 4):
        with tempfile.TemporaryDirectory() as tmp:
            wall[p], run_dir, _ = _run(Path(tmp), _test_toml(trials, 1, p))
            span[p] = _span(_records(run_dir))
    print(f"2. parallel: {trials} x 1 s trials, max_parallel 1 vs 4: sweep {span[1]:.2f} s vs {span[4]:.2f} s "
          f"-> {span[1] / span[4]:.2f}x (aim >= 3.5); whole run {wall[1]:.2f} s vs {wall[4]:.2f} s "
          f"-> {wall[1] / wall[4]:.2f}x")  # fmt: skip


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
    dry_run()  # first: RUSAGE_CHILDREN is a max over every child so far
    overhead(40 if quick else 200)
    parallel(8 if quick else 32)


if __name__ == "__main__":
    main()
