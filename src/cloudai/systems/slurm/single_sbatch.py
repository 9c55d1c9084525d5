"""``--single-sbatch``: one sbatch job runs every test of a scenario as ``srun`` steps.

One allocation instead of one queue wait per test. Steps run one after another, in the
order given, each in its own job dir with its own ``stdout.txt``/``stderr.txt``; each
writes ``step_status.txt`` (``<start epoch> <end epoch> <exit code>``) when it ends, so
after the allocation ends ``collect_steps`` turns the files into one finished ``Job`` per
step, which the caller records exactly as it records separately submitted jobs.

A step with ``stop_after`` set (an ``end_post_comp`` dependency) is launched in the
background with ``srun --overlap`` and stopped (SIGTERM through ``srun``, marked
``step_stopped``) right after the step named by ``stop_after`` has ended. The caller
orders the steps so that dependencies come first; ``start_post_init`` degrades to "after",
since foreground steps never overlap.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import ConfigError
from cloudai.systems.base import Job, JobSpec, JobStatus
from cloudai.systems.shell import export_lines, join, quote
from cloudai.systems.slurm.container import container_env, container_flags
from cloudai.systems.slurm.placement import placed_count, resolve_nodes
from cloudai.systems.slurm.render import STDERR, STDOUT, sbatch_header, slurm_file, srun_prefix, time_directive
from cloudai.systems.slurm.system import SlurmSystem
from cloudai.systems.slurm.tasks import with_ntasks

SCRIPT_NAME = "single_sbatch.sh"
STATUS_FILE = "step_status.txt"
STOPPED_FILE = "step_stopped"
_MARGIN_S = 60  # allocation time on top of the steps' limits: srun start-up, result files
_CLOCK_SKEW_S = 1.0  # steps time themselves on the compute node, we on this one

_FUNCTIONS = """\
cloudai_step() {  # DIR CMD...: run one step, record "start end exit-code" in DIR/step_status.txt
    local dir=$1; shift
    local start; start=$(date +%s.%N)
    "$@"
    local rc=$?
    printf '%s %s %s\\n' "$start" "$(date +%s.%N)" "$rc" > "$dir/step_status.txt"
}
cloudai_stop() {  # DIR PID: stop a background step that is still running (end_post_comp)
    if kill -0 "$2" 2>/dev/null; then touch "$1/step_stopped"; pkill -TERM -P "$2"; fi
    wait "$2"
}"""


@dataclass(frozen=True)
class ScriptStep:
    """One step of the script. ``stop_after``: run in the background until that step (a name) has ended."""

    spec: JobSpec
    stop_after: str | None = None
    stop_reason: str = ""


def render_single_sbatch(steps: Sequence[ScriptStep], config: SlurmSystemConfig, run_dir: Path, name: str) -> str:
    """One script for all ``steps``. Its time limit is the sum of theirs (plus a margin) when all have one."""
    if not steps:
        raise ValueError("no jobs to put in a single sbatch script")
    run_dir = run_dir.absolute()
    limits = [step.spec.time_limit_s for step in steps]
    total = sum(limit for limit in limits if limit) + _MARGIN_S if all(limits) else None
    lines = sbatch_header(
        job_name=name,
        stdout=run_dir / f"single_sbatch.{STDOUT}",
        stderr=run_dir / f"single_sbatch.{STDERR}",
        config=config,
        num_nodes=max(placed_count(config, step.spec.num_nodes, step.spec.nodes) for step in steps),
        time_limit_s=total,
        nodes=_allocation_nodes(steps),
        exclude_nodes=[node for step in steps for node in step.spec.exclude_nodes],
    )
    lines += ["", *export_lines(config.global_env_vars), "", _FUNCTIONS]
    background = {step.spec.name: index for index, step in enumerate(steps, start=1) if step.stop_after}
    for index, step in enumerate(steps, start=1):
        lines += ["", f"# step {index}/{len(steps)}: {step.spec.name}", *_step_lines(step, config, index)]
        for other in steps:
            if other.stop_after == step.spec.name:
                dir_ = quote(str(other.spec.job_dir.absolute()))
                lines.append(f"cloudai_stop {dir_} $cloudai_bg_{background[other.spec.name]}")
    if background:
        lines += ["", "wait"]
    return "\n".join(lines) + "\n"


def _allocation_nodes(steps: Sequence[ScriptStep]) -> list[str]:
    """Every step's named nodes when all steps name theirs; else none (``-N``: a step's ``--nodelist``
    must then fall inside what Slurm allocated, and srun says so when it does not)."""
    if not all(step.spec.nodes for step in steps):
        return []
    return [node for step in steps for node in step.spec.nodes]


def _step_lines(step: ScriptStep, config: SlurmSystemConfig, index: int) -> list[str]:
    spec = step.spec
    if spec.steps and not spec.in_batch_shell:
        raise ConfigError(
            f"{spec.name}: its workload runs several steps (a server and its client, ...), "
            "which --single-sbatch cannot nest in one step",
            hint="run this scenario without --single-sbatch",
        )
    job_dir = spec.job_dir.absolute()
    named = resolve_nodes(spec.nodes, config)
    flags = [f"-N {len(named) or spec.num_nodes}", f"--job-name={quote(spec.name)}"]
    flags += [f"--nodelist={','.join(named)}"] if named else []
    flags += [f"--output={quote(slurm_file(job_dir / STDOUT))}", f"--error={quote(slurm_file(job_dir / STDERR))}"]
    if spec.time_limit_s:
        flags.append(f"--time={time_directive(spec.time_limit_s)}")
    if step.stop_after:
        flags.append("--overlap")  # shares the allocation's CPUs with the foreground steps
    flags += container_flags(spec, config)
    quoted_dir = quote(str(job_dir))
    srun = " ".join([*with_ntasks(srun_prefix(config, flags), spec), join(spec.argv)])
    if spec.in_batch_shell:
        srun = join(spec.argv)
    body = [
        *export_lines(spec.env, container_env(spec, config)),
        f"cd {quoted_dir}",
        f"cloudai_step {quoted_dir} {srun}",
    ]
    block = [f"mkdir -p {quoted_dir}", "(", *[f"    {line}" for line in body], ")"]
    if step.stop_after:
        block[-1] = ") &"
        block.append(f"cloudai_bg_{index}=$!  # stopped once {step.stop_after} has ended")
    return block


def collect_steps(steps: Sequence[ScriptStep], allocation: Job, cancelled_at: float | None = None) -> list[Job]:
    """One finished ``Job`` per step from its ``step_status.txt``; steps that never ended take the allocation's fate.

    ``cancelled_at``: when we cancelled the allocation; a step that failed from then on was
    killed by that cancel (it may still write its status file), so it is cancelled too.
    """
    jobs = []
    for index, step in enumerate(steps, start=1):
        spec = step.spec
        job = Job(spec, f"{allocation.job_id}.{index}", submitted_at=allocation.submitted_at)
        try:
            start, end, code = (spec.job_dir / STATUS_FILE).read_text().split()
            job.started_at, job.ended_at, job.returncode = float(start), float(end), int(code)
        except (OSError, ValueError):
            fate = allocation.status if allocation.status is not JobStatus.OK else JobStatus.FAILED
            job.status, job.ended_at = fate, allocation.ended_at
            job.reason = f"did not finish inside the single sbatch job {allocation.job_id} ({allocation.status})"
            jobs.append(job)
            continue
        limit = spec.time_limit_s
        if cancelled_at is not None and code != "0" and job.ended_at >= cancelled_at - _CLOCK_SKEW_S:
            job.status, job.reason = JobStatus.CANCELLED, allocation.reason
        elif (spec.job_dir / STOPPED_FILE).exists():
            job.status, job.reason = JobStatus.STOPPED, step.stop_reason or f"{step.stop_after} ended"
        elif code != "0" and limit and job.ended_at - job.started_at >= limit:
            job.status, job.reason = JobStatus.TIMEOUT, f"time limit of {limit:g}s reached"
        elif code != "0":
            job.status, job.reason = JobStatus.FAILED, f"exit code {code}"
        else:
            job.status = JobStatus.OK
        jobs.append(job)
    return jobs


def submit_script(system: SlurmSystem, steps: Sequence[ScriptStep], run_dir: Path, name: str) -> Job:
    """Write ``<run_dir>/single_sbatch.sh`` and queue it; the allocation as a ``Job`` to wait on."""
    for step in steps:
        step.spec.job_dir.mkdir(parents=True, exist_ok=True)
    script = run_dir.absolute() / SCRIPT_NAME
    script.write_text(render_single_sbatch(steps, system.config, run_dir, name))
    return Job(JobSpec(name, ("bash", str(script)), run_dir), system.sbatch(script), submitted_at=time.time())
