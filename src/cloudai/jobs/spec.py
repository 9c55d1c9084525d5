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
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cloudai.atomicfile import write_small
from cloudai.config.scenario import RunEntry
from cloudai.config.timelimit import parse_time_limit
from cloudai.errors import WorkloadError
from cloudai.jobs.reasons import failure_reason, missing_metrics
from cloudai.space import split_knobs
from cloudai.systems.base import Container, Job, JobSpec, JobStatus
from cloudai.workloads.base import METRICS_FILE, JobContext, Workload, job_nodes

log = logging.getLogger(__name__)


def build_spec(
    entry: RunEntry,
    workload: Workload,
    values: Mapping[str, Any],
    job_dir: Path,
    name: str,
    install_path: Path | None = None,
    gpus_per_node: int | None = None,
    hf_home: Path | None = None,
) -> JobSpec:
    """The job for one set of knob values (flat names, see ``cloudai.space``); ``install_path``,
    ``gpus_per_node`` and ``hf_home`` (default ``<install_path>/huggingface``, as CloudAI's) are the system's."""
    cmd_args, env, num_nodes = split_knobs(values)
    num_nodes = job_nodes(workload, cmd_args, num_nodes, "num_nodes" in entry.scenario_fields)
    log.debug("job %s: %s in %s", name, values, job_dir)
    env = workload.job_env(cmd_args, env)
    context = JobContext(
        job_dir,
        num_nodes,
        entry.extra_cmd_args,
        install_path,
        gpus_per_node,
        env,
        entry.git_repos,
        entry.time_limit_s,
        entry.extra_container_mounts,
        hf_home or (install_path / "huggingface" if install_path else None),
    )
    argv = workload.argv(cmd_args, context)
    image = workload.container_image(cmd_args)
    mounts = (
        *entry.extra_container_mounts,
        *repo_mounts(entry, install_path),
        *workload.container_mounts(cmd_args, context),
    )
    container = Container(image, mounts, tuple(workload.container_env(cmd_args, context).items())) if image else None
    ntasks = workload.ntasks(cmd_args)
    return JobSpec(
        name,
        tuple(argv),
        job_dir,
        env,
        entry.time_limit_s,
        num_nodes,
        container=container,
        ntasks=ntasks,
        ntasks_per_node=workload.ntasks_per_node(cmd_args),
        mpi=workload.mpi,
        nodes=entry.nodes,
        exclude_nodes=entry.exclude_nodes,
        pending_timeout_s=_pending_timeout_s(entry),
        steps=tuple(workload.steps(cmd_args, context)),
        evaluate=workload.evaluate(cmd_args, context),
    )


def repo_mounts(entry: RunEntry, install_path: Path | None) -> list[str]:
    """The test's ``git_repos`` as container mounts, after its ``extra_container_mounts`` (CloudAI's order)."""
    if install_path is None:
        return []
    return [f"{install_path.absolute() / repo.dir_name}:{repo.container_mount}" for repo in entry.git_repos]


def _pending_timeout_s(entry: RunEntry) -> float | None:
    """``agent_config.pending_timeout`` (validated at load for agent-driven tests; plain ones ignore agent_config)."""
    value = (entry.agent.config or {}).get("pending_timeout")
    try:
        return None if value is None else float(parse_time_limit(value))
    except ValueError:
        return None


def plain_values(entry: RunEntry) -> dict[str, Any]:
    """Knob values of a plain (non-swept) entry."""
    return entry.knobs


def finish_job(job: Job, workload: Workload, required: Sequence[str] = ()) -> dict[str, float]:
    """Read a finished job's metrics, fail it when they are missing, write ``job.json``.

    A job that exited 0 fails here when its workload promised metrics or the caller ``required``
    some (an agent's ``agent_metrics``) and they are not there: job.json, trajectory.csv and the
    report then agree on the status, and every failure carries a one-line reason (``reasons``).
    """
    metrics: dict[str, float] = {}
    wants = workload.produces_metrics or bool(required) or (job.spec.job_dir / METRICS_FILE).exists()
    if job.status is JobStatus.OK and wants:
        try:
            metrics = workload.read_metrics(job.spec.job_dir)
        except WorkloadError as exc:
            job.status, job.reason = JobStatus.FAILED, str(exc)
        else:
            if missing := missing_metrics(required, metrics):
                job.status, job.reason = JobStatus.FAILED, missing
    if job.status in (JobStatus.FAILED, JobStatus.TIMEOUT):
        detail = workload.failure_reason(job.spec.job_dir) if job.status is JobStatus.FAILED else None
        if detail:  # the tool's own error line (fio's "fio: ..."), after the exit code
            job.reason = f"{job.reason}: {detail}" if job.reason and detail not in job.reason else detail
        else:
            job.reason = failure_reason(job.reason, job.returncode, job.spec.job_dir)
    log.debug(
        "job %s ended %s%s; metrics %s", job.spec.name, job.status, f" ({job.reason})" if job.reason else "", metrics
    )
    data = (json.dumps({**job.record(), "metrics": metrics}) + "\n").encode()  # no indent: C encoder, 4x faster
    path = f"{job.spec.job_dir}/job.json"  # joined as text, as the job's other files (systems.standalone)
    try:  # the one metadata write of a trial: no mkdir, no temp file, no fsync (see RELIABILITY.md)
        write_small(path, data)
    except FileNotFoundError:  # a job that never got its dir (e.g. cancelled before submit)
        job.spec.job_dir.mkdir(parents=True, exist_ok=True)
        write_small(path, data)
    return metrics


def job_dir(run_dir: Path, entry: RunEntry, iteration: int) -> Path:
    return run_dir / entry.id / str(iteration)
