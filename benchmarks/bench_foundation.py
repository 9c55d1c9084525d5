"""Foundation benchmark: CLI start-up and per-job orchestration overhead.

1. ``cloudai --help`` wall time (median of 7), next to a bare ``python -c pass``.
2. A 50-job plain scenario of ``sleep 0`` run one job at a time, in this process (CLI start-up
   excluded), vs 50 bare ``subprocess.run(["sleep", "0"])`` calls: per-job times and the
   difference (aim: < 5 ms per job beyond the bare subprocess).

Run: ``uv run python benchmarks/bench_foundation.py``
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOBS = 50


def _median_wall(argv: list[str], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _scenario(root: Path) -> tuple[Path, Path, Path]:
    tests = root / "tests"
    tests.mkdir()
    (tests / "zero.toml").write_text('name = "zero"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 0\n')
    entries = "".join(f'[[Tests]]\nid = "t{i}"\ntest_name = "zero"\n' for i in range(JOBS))
    scenario = root / "scenario.toml"
    scenario.write_text(f'name = "bench"\n{entries}')
    system = root / "system.toml"
    system.write_text(
        f'name = "one-at-a-time"\nscheduler = "standalone"\nmax_concurrent_jobs = 1\n'
        f'output_path = "{root / "results"}"\n'
    )
    return system, tests, scenario


def _cloudai_per_job(root: Path) -> float:
    from cloudai.plan.load import build_system, load_plan
    from cloudai.run.plain import PlainRunner
    from cloudai.run.rundir import create_run_dir

    system_file, tests, scenario = _scenario(root)
    plan = load_plan(system_file, tests, scenario)
    system = build_system(plan.system_config)
    run_dir = create_run_dir(root / "results", plan.scenario.name)
    runner = PlainRunner(system, plan.workloads(), run_dir, max_concurrent=1)
    start = time.perf_counter()
    outcome = runner.run(plan.scenario)
    elapsed = time.perf_counter() - start
    assert len(outcome.jobs) == JOBS and not outcome.failed
    return elapsed / JOBS


def _bare_per_job() -> float:
    start = time.perf_counter()
    for _ in range(JOBS):
        subprocess.run(["sleep", "0"], check=True)
    return (time.perf_counter() - start) / JOBS


def main() -> None:
    cloudai_bin = shutil.which("cloudai") or str(Path(sys.executable).with_name("cloudai"))
    help_s = _median_wall([cloudai_bin, "--help"])
    python_s = _median_wall([sys.executable, "-c", "pass"])
    print(f"cloudai --help: {help_s * 1000:.0f} ms (bare python start-up {python_s * 1000:.0f} ms; aim <= 300 ms)")
    with tempfile.TemporaryDirectory() as tmp:
        bare = min(_bare_per_job() for _ in range(3))
        ours = min(_cloudai_per_job(Path(tmp) / str(i)) for i in range(3) if (Path(tmp) / str(i)).mkdir() is None)
    print(
        f"per job, one at a time: bare subprocess {bare * 1000:.2f} ms, cloudai {ours * 1000:.2f} ms, "
        f"overhead {(ours - bare) * 1000:.2f} ms/job (aim < 5 ms)"
    )


if __name__ == "__main__":
    main()
