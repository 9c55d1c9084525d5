"""Plain jobs: every scenario entry x ``iterations``, honouring dependencies, bounded concurrency.

Dependency semantics (CloudAI's), for an entry B that names entry A:

* ``start_post_init``: B starts once A's first job has started;
* ``start_post_comp``: B starts once every iteration of A has finished, whatever its status;
* ``end_post_comp``: B starts at once and is stopped (status ``stopped``, not a failure)
  when every iteration of A has finished.

Iterations of one entry run one after another. Ctrl-C / SIGTERM (raised as
``KeyboardInterrupt``) cancels every running job, records it, and raises ``Interrupted``.
The same job plumbing (``build_spec``, ``finish_job``) serves the DSE env's trials.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cloudai.atomicfile import write_small
from cloudai.config.scenario import RunEntry
from cloudai.errors import WorkloadError
from cloudai.space import entry_knobs, split_knobs
from cloudai.systems.base import Job, JobSpec, JobStatus
from cloudai.workloads.base import METRICS_FILE, JobContext, Workload


def build_spec(entry: RunEntry, workload: Workload, values: Mapping[str, Any], job_dir: Path, name: str) -> JobSpec:
    """The job for one set of knob values (flat names, see ``cloudai.space``)."""
    cmd_args, env, num_nodes = split_knobs(values)
    context = JobContext(job_dir=job_dir, num_nodes=num_nodes, extra_cmd_args=entry.extra_cmd_args)
    argv = workload.argv(cmd_args, context)
    return JobSpec(name, tuple(argv), job_dir, env, entry.time_limit_s, num_nodes)


def plain_values(entry: RunEntry) -> dict[str, Any]:
    """Knob values of a plain (non-swept) entry."""
    return entry_knobs(entry.cmd_args, entry.extra_env_vars, entry.num_nodes)


def finish_job(job: Job, workload: Workload) -> dict[str, float]:
    """Read a finished job's metrics (failing it when its workload promised some), write ``job.json``."""
    metrics: dict[str, float] = {}
    wants = workload.produces_metrics or (job.spec.job_dir / METRICS_FILE).exists()
    if job.status is JobStatus.OK and wants:
        try:
            metrics = workload.read_metrics(job.spec.job_dir)
        except WorkloadError as exc:
            job.status, job.reason = JobStatus.FAILED, str(exc)
    data = json.dumps({**job.record(), "metrics": metrics}, indent=1).encode()
    try:  # the one metadata write of a trial: no mkdir, no temp file, no fsync (see RELIABILITY.md)
        write_small(job.spec.job_dir / "job.json", data)
    except FileNotFoundError:  # a job that never got its dir (e.g. cancelled before submit)
        job.spec.job_dir.mkdir(parents=True, exist_ok=True)
        write_small(job.spec.job_dir / "job.json", data)
    return metrics


def job_dir(run_dir: Path, entry: RunEntry, iteration: int) -> Path:
    return run_dir / entry.id / str(iteration)
