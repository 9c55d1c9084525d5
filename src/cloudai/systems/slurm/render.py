"""sbatch scripts as pure text: a ``JobSpec`` and the system config in, the script out.

Nothing here touches Slurm or the disk beyond ``Path.absolute()`` (which reads the working
directory), so golden files pin the exact output. The layout follows CloudAI's: ``#SBATCH``
header, exported environment, ``cd`` into the job dir, one ``srun`` of the job's argv.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.timelimit import format_time_limit
from cloudai.errors import ConfigError
from cloudai.steps import Run
from cloudai.systems.base import DEPENDENCY_TYPES, Container, JobSpec
from cloudai.systems.shell import directive, export_lines, join, quote
from cloudai.systems.slurm.container import container_env, container_flags, container_note
from cloudai.systems.slurm.placement import placement_flags
from cloudai.systems.slurm.tasks import with_ntasks
from cloudai.systems.steps_script import Launch, has_background, render_steps

__all__ = ["export_lines"]  # renderers import quoting from cloudai.systems.shell; kept here for old imports

SCRIPT_NAME = "sbatch.sh"
STDOUT = "stdout.txt"
STDERR = "stderr.txt"


def dependency_expr(kind: str, job_ids: Sequence[str]) -> str | None:
    """``"afterany:12:13"`` for ``start_post_comp`` on jobs 12 and 13; None when Slurm cannot express it.

    ``start_post_comp`` maps to ``afterany`` (not ``afterok``) because our runner starts the
    dependent job whatever the other job's status; use ``afterok`` yourself for CloudAI's
    stricter flavour.
    """
    slurm_type = DEPENDENCY_TYPES.get(kind)
    if slurm_type is None or not job_ids:
        return None
    return ":".join([slurm_type, *job_ids])


def slurm_file(path: Path) -> str:
    """A path for ``--output``/``--error``: Slurm expands ``%j``, ``%x``, ``%N``... in them, ``%%`` is a ``%`` (a
    scenario named ``100%`` made every job's output vanish into ``100<something>``)."""
    return str(path).replace("%", "%%")


def header_path(path: Path) -> str:
    """``slurm_file`` for an ``#SBATCH`` line, double-quoted when it holds a space (sbatch splits the line like a
    shell would); a double quote or backslash cannot be written there and is refused."""
    text = slurm_file(path)
    if '"' in text or "\\" in text:
        raise ConfigError(
            f"results path {text!r} holds a double quote or backslash, which an #SBATCH line cannot carry",
            field="--output-dir",
            hint="use an output directory (and scenario name) without them",
        )
    return f'"{text}"' if any(c.isspace() for c in text) else text


def time_directive(seconds: float) -> str:
    """``--time`` value; whole seconds rounded up (Slurm itself enforces whole minutes)."""
    return format_time_limit(max(1, math.ceil(seconds)))


def sbatch_header(
    *,
    job_name: str,
    stdout: Path,
    stderr: Path,
    config: SlurmSystemConfig,
    num_nodes: int,
    time_limit_s: float | None,
    dependencies: Sequence[str] = (),
    nodes: Sequence[str] = (),
    exclude_nodes: Sequence[str] = (),
) -> list[str]:
    """The ``#!`` line and ``#SBATCH`` directives, in a fixed order (each through ``shell.directive``)."""
    flags = [f"--job-name={job_name}", f"--output={header_path(stdout)}", f"--error={header_path(stderr)}"]
    flags.append(f"--partition={config.default_partition}")
    flags += placement_flags(config, num_nodes, nodes, exclude_nodes)
    if config.account:
        flags.append(f"--account={config.account}")
    if config.gpus_per_node:
        flags.append(f"--gpus-per-node={config.gpus_per_node}")
        flags.append(f"--gres=gpu:{config.gpus_per_node}")  # CloudAI renders both
    if config.ntasks_per_node:
        flags.append(f"--ntasks-per-node={config.ntasks_per_node}")
    if time_limit_s:
        flags.append(f"--time={time_directive(time_limit_s)}")
    if config.exclusive:
        flags.append("--exclusive")
    if dependencies:
        flags.append(f"--dependency={','.join(dependencies)}")
        flags.append("--kill-on-invalid-dep=yes")
    flags += config.extra_sbatch_args
    return ["#!/bin/bash", *(directive(flag) for flag in flags)]


def srun_prefix(config: SlurmSystemConfig, extra: Sequence[str] = ()) -> list[str]:
    """``srun`` and its flags, before the job's argv (already shell-safe tokens)."""
    words = ["srun", "--export=ALL", quote(f"--mpi={config.mpi}")]  # checked at load; quoted all the same
    if config.distribution:
        words.append(quote(f"--distribution={config.distribution}"))
    words += extra
    if config.extra_srun_args:  # several flags, as CloudAI appends them, but each word quoted: data, never code
        words += [quote(word) for word in shlex.split(config.extra_srun_args)]
    return words


def render_sbatch(spec: JobSpec, config: SlurmSystemConfig, dependencies: Sequence[str] = ()) -> str:
    """The sbatch script for one job: output into its job dir, one ``srun`` of its argv."""
    job_dir = spec.job_dir.absolute()
    lines = sbatch_header(
        job_name=spec.name,
        stdout=job_dir / STDOUT,
        stderr=job_dir / STDERR,
        config=config,
        num_nodes=spec.num_nodes,
        time_limit_s=spec.time_limit_s,
        dependencies=dependencies,
        nodes=spec.nodes,
        exclude_nodes=spec.exclude_nodes,
    )
    lines.append("")
    lines += export_lines(config.global_env_vars, spec.env, container_env(spec, config))
    lines.append(f"cd {quote(str(job_dir))}")
    lines.append("")
    lines += container_note(spec, config)
    if spec.in_batch_shell:  # once, in the batch shell (CloudAI's BashCmd), not one srun task per allocated task
        lines.append(join(spec.argv))
    elif spec.steps:
        lines += render_steps(spec.steps, HEAD_NODE, step_launcher(spec, config), NODES)
    else:
        srun = with_ntasks(srun_prefix(config, container_flags(spec, config)), spec)
        lines.append(" ".join([*srun, join(spec.argv)]))
    return "\n".join(lines) + "\n"


def step_spec(spec: JobSpec, run: Run) -> JobSpec:
    """The job as one of its steps sees it: the step's own image and mounts, when it names them."""
    if run.image is None and not run.mounts:
        return spec
    base = spec.container or Container(run.image or "")
    image = run.image or base.image
    return replace(spec, container=Container(image, (*base.mounts, *run.mounts)) if image else None)


HEAD_NODE = '$(scontrol show hostname "$SLURM_JOB_NODELIST" | head -n 1)'
NODES = '$(scontrol show hostname "$SLURM_JOB_NODELIST")'


def step_launcher(spec: JobSpec, config: SlurmSystemConfig) -> Launch:
    """How one step of a multi-step job starts: an ``srun`` step of the allocation (in the job's container,
    ``--overlap`` when steps run at once, on one node of the job when it names one), or the batch shell itself."""
    job_dir = spec.job_dir.absolute()
    overlap = has_background(spec.steps)

    def launch(run: Run, command: str) -> str:
        if run.batch_shell:
            return f"{command} > {quote(str(job_dir / run.output))} 2>&1" if run.output else command
        words = srun_prefix(config, container_flags(step_spec(spec, run), config) if run.container else [])
        if overlap:
            words.append("--overlap")
        if run.node is not None and run.num_nodes is not None and run.num_nodes > 1:
            last = run.node + run.num_nodes
            lines = f"sed -n '{run.node + 1},{last}p' | paste -sd,"
            words += [f"-N{run.num_nodes}", f'--nodelist=$(scontrol show hostname "$SLURM_JOB_NODELIST" | {lines})']
        elif run.node is not None:
            words += ["-N1", f"--nodelist=$(scontrol show hostname \"$SLURM_JOB_NODELIST\" | sed -n '{run.node + 1}p')"]
        elif run.num_nodes:
            words.append(f"-N{run.num_nodes}")
        if run.ntasks_per_node:
            words.append(f"--ntasks-per-node={run.ntasks_per_node}")
        if run.ntasks:
            words.append(f"--ntasks={run.ntasks}")
        if run.name:
            words.append(f"--job-name=cloudai-{run.name}")
        if run.output:
            words.append(quote(f"--output={slurm_file(job_dir / run.output)}"))
        return " ".join([*words, command])

    return launch
