"""``--single-sbatch``: one sbatch job runs every test of a scenario as ``srun`` steps, in order.

One allocation instead of one queue wait per test: the steps run one after another inside
it, each in its own job dir with its own ``stdout.txt``/``stderr.txt``. Each step writes
``step_status.txt`` (``<start epoch> <end epoch> <exit code>``) when it ends, so after the
allocation ends ``collect_steps`` turns the files into one finished ``Job`` per spec, which
the caller records exactly as it records separately submitted jobs.

The order of ``specs`` is the order of the steps: the caller lists dependencies first.
Steps cannot overlap, so ``start_post_init`` and ``end_post_comp`` degrade to "after".
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from pathlib import Path

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import Interrupted, SubmissionError
from cloudai.systems.base import Job, JobSpec, JobStatus
from cloudai.systems.slurm.parse import parse_sbatch
from cloudai.systems.slurm.render import STDERR, STDOUT, export_lines, sbatch_header, srun_prefix, time_directive
from cloudai.systems.slurm.system import SlurmSystem

SCRIPT_NAME = "single_sbatch.sh"
STATUS_FILE = "step_status.txt"
_MARGIN_S = 60  # allocation time on top of the steps' limits: srun start-up, result files

_STEP_FUNCTION = """\
cloudai_step() {  # DIR CMD...: run one step, record "start end exit-code" in DIR/step_status.txt
    local dir=$1; shift
    local start; start=$(date +%s.%N)
    "$@"
    local rc=$?
    printf '%s %s %s\\n' "$start" "$(date +%s.%N)" "$rc" > "$dir/step_status.txt"
}"""


def render_single_sbatch(specs: Sequence[JobSpec], config: SlurmSystemConfig, run_dir: Path, name: str) -> str:
    """One script for all ``specs``. Its time limit is the sum of theirs (plus a margin) when all have one."""
    if not specs:
        raise ValueError("no jobs to put in a single sbatch script")
    run_dir = run_dir.absolute()
    limits = [spec.time_limit_s for spec in specs]
    total = sum(limit for limit in limits if limit) + _MARGIN_S if all(limits) else None
    lines = sbatch_header(
        job_name=name,
        stdout=run_dir / f"single_sbatch.{STDOUT}",
        stderr=run_dir / f"single_sbatch.{STDERR}",
        config=config,
        num_nodes=max(spec.num_nodes for spec in specs),
        time_limit_s=total,
    )
    lines += ["", *export_lines(config.global_env_vars), "", _STEP_FUNCTION]
    for index, spec in enumerate(specs, start=1):
        lines += ["", f"# step {index}/{len(specs)}: {spec.name}", *_step_lines(spec, config)]
    return "\n".join(lines) + "\n"


def _step_lines(spec: JobSpec, config: SlurmSystemConfig) -> list[str]:
    job_dir = spec.job_dir.absolute()
    flags = [f"-N {spec.num_nodes}", f"--job-name={shlex.quote(spec.name)}"]
    flags += [f"--output={shlex.quote(str(job_dir / STDOUT))}", f"--error={shlex.quote(str(job_dir / STDERR))}"]
    if spec.time_limit_s:
        flags.append(f"--time={time_directive(spec.time_limit_s)}")
    quoted_dir = shlex.quote(str(job_dir))
    srun = " ".join([*srun_prefix(config, flags), shlex.join(spec.argv)])
    body = [*export_lines(spec.env), f"cd {quoted_dir}", f"cloudai_step {quoted_dir} {srun}"]
    return [f"mkdir -p {quoted_dir}", "(", *[f"    {line}" for line in body], ")"]


def collect_steps(specs: Sequence[JobSpec], allocation: Job) -> list[Job]:
    """One finished ``Job`` per spec from its ``step_status.txt``; steps that never ended take the allocation's fate."""
    jobs = []
    for index, spec in enumerate(specs, start=1):
        job = Job(spec, f"{allocation.job_id}.{index}", submitted_at=allocation.submitted_at)
        status_file = spec.job_dir / STATUS_FILE
        try:
            start, end, code = status_file.read_text().split()
            job.started_at, job.ended_at, job.returncode = float(start), float(end), int(code)
        except (OSError, ValueError):
            fate = allocation.status if allocation.status is not JobStatus.OK else JobStatus.FAILED
            job.status, job.ended_at = fate, allocation.ended_at
            job.reason = f"did not finish inside the single sbatch job {allocation.job_id} ({allocation.status})"
            jobs.append(job)
            continue
        limit = spec.time_limit_s
        if code != "0" and limit and job.ended_at - job.started_at >= limit:
            job.status, job.reason = JobStatus.TIMEOUT, f"time limit of {limit:g}s reached"
        elif code != "0":
            job.status, job.reason = JobStatus.FAILED, f"exit code {code}"
        else:
            job.status = JobStatus.OK
        jobs.append(job)
    return jobs


def run_single_sbatch(system: SlurmSystem, specs: Sequence[JobSpec], run_dir: Path, name: str) -> list[Job]:
    """Write ``<run_dir>/single_sbatch.sh``, submit it, wait for it, return the steps as finished jobs.

    Ctrl-C cancels the allocation and raises ``Interrupted`` (exit 130).
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        spec.job_dir.mkdir(parents=True, exist_ok=True)
    script = run_dir.absolute() / SCRIPT_NAME
    script.write_text(render_single_sbatch(specs, system.config, run_dir, name))
    result = system.commands.run(["sbatch", "--parsable", str(script)], cwd=run_dir)
    if not result.ok:
        raise SubmissionError(f"could not submit {script}: {result.describe()}")
    try:
        job_id = parse_sbatch(result.stdout)
    except ValueError as exc:
        raise SubmissionError(f"could not submit {script}: {exc}") from None
    allocation = Job(JobSpec(name, ("bash", str(script)), run_dir), job_id, submitted_at=time.time())
    try:
        while not allocation.done:
            system.wait([allocation], timeout=None)
    except KeyboardInterrupt:
        system.cancel([allocation], "interrupted")
        message = f"interrupted: cancelled the single sbatch job {job_id}; results so far in {run_dir}"
        raise Interrupted(message) from None
    return collect_steps(specs, allocation)
