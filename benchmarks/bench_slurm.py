"""Slurm benchmark: per-trial overhead on Slurm vs standalone, and squeue load with 100 queued jobs.

1. ``TRIALS`` trials of ``sleep 0``, one at a time, through the ``System`` interface the
   runner and the DSE env use (submit, wait until final, ``finish_job``), on the standalone
   system and on the local Slurm at two poll intervals, next to bare ``sbatch`` + a 20 ms
   ``squeue`` loop (Slurm's own latency: the controller starting the batch step, the job
   leaving the queue). cloudai's share is the rest: on average half a poll interval.
2. 100 held (queued, never started) jobs waited on for ``WINDOW_S`` seconds at
   ``poll_interval_s = 1``: ``squeue`` calls per minute (must be ~60, one per poll for all
   100 jobs, not one per job).

Needs the local Slurm: ``eval "$(LOCAL_SLURM_CPUS=8 bash ../shared/tools/start-local-slurm.sh)"``.
Run: ``uv run python benchmarks/bench_slurm.py``
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import StandaloneSystemConfig
from cloudai.jobs.spec import finish_job
from cloudai.systems.base import Job, JobSpec, System
from cloudai.systems.slurm.system import SlurmSystem
from cloudai.systems.standalone import StandaloneSystem
from cloudai.workloads.sleep import Sleep

TRIALS = 10
QUEUED = 100
WINDOW_S = 15.0


def _slurm(poll_s: float, extra: list[str] | None = None) -> SlurmSystem:
    config = SlurmSystemConfig.model_validate(
        {
            "name": "local-slurm",
            "default_partition": "debug",
            "partitions": [{"name": "debug"}],
            "mpi": "none",
            "poll_interval_s": poll_s,
            "extra_sbatch_args": extra or [],
        }
    )
    system = SlurmSystem(config)
    system.check()
    return system


def _trial_seconds(system: System, root: Path) -> list[float]:
    """Wall time of each trial: submit -> final state -> job.json written."""
    workload = Sleep()
    times = []
    for i in range(TRIALS):
        spec = JobSpec(f"bench.{i}", ("sleep", "0"), root / str(i))
        start = time.perf_counter()
        job = system.submit(spec)
        while not job.done:
            system.wait([job], timeout=None)
        finish_job(job, workload)
        times.append(time.perf_counter() - start)
        assert job.status == "ok", (job.status, job.reason)
    return times


def _raw_slurm_seconds(root: Path) -> list[float]:
    """Slurm alone: ``sbatch --wrap 'sleep 0'``, then ``squeue`` every 20 ms until the job left the queue."""
    times = []
    for _ in range(TRIALS):
        start = time.perf_counter()
        submitted = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 0"], cwd=root,
                                   capture_output=True, text=True, check=True)  # fmt: skip
        job_id = submitted.stdout.strip().split(";")[0]
        while subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%i"], capture_output=True, text=True).stdout.strip():
            time.sleep(0.02)
        times.append(time.perf_counter() - start)
    return times


def _squeue_per_minute(root: Path) -> tuple[float, int]:
    system = _slurm(1.0, ["--hold"])  # held: queued for as long as we like, never started
    jobs: list[Job] = [system.submit(JobSpec(f"held.{i}", ("true",), root / f"held{i}")) for i in range(QUEUED)]
    try:
        before = system.commands.calls["squeue"]
        start = time.monotonic()
        system.wait(jobs, timeout=WINDOW_S)
        elapsed = time.monotonic() - start
        calls = system.commands.calls["squeue"] - before
    finally:
        system.cancel(jobs, "benchmark done")
    return calls / elapsed * 60, calls


def main() -> None:
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        root = Path(tmp)
        standalone = _trial_seconds(StandaloneSystem(StandaloneSystemConfig()), root / "standalone")
        print(f"per trial (sleep 0, median of {TRIALS}, one at a time):")
        base = statistics.median(standalone)
        print(f"  standalone                   {base * 1000:8.1f} ms")
        raw = statistics.median(_raw_slurm_seconds(root))
        print(f"  bare sbatch + 20 ms squeue   {raw * 1000:8.1f} ms  (Slurm's own latency)")
        for poll in (0.1, 1.0):
            slurm = statistics.median(_trial_seconds(_slurm(poll), root / f"slurm{poll}"))
            print(f"  slurm, poll_interval_s={poll:<4g} {slurm * 1000:8.1f} ms  (+{(slurm - base) * 1000:.0f} ms)")
        per_minute, calls = _squeue_per_minute(root / "queued")
        print(
            f"squeue with {QUEUED} queued jobs, poll_interval_s=1: {calls} calls in {WINDOW_S:g} s "
            f"= {per_minute:.1f} calls/min for all {QUEUED} jobs (aim: ~60, one per poll)"
        )


if __name__ == "__main__":
    main()
