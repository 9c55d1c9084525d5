"""``--single-sbatch``: a whole plan as the steps of ONE sbatch job, recorded as a normal run is.

Layout (``build_steps``), before anything is written:

* plain entries: one step per iteration, entries in dependency order (scenario order where
  free). ``start_post_init``/``start_post_comp`` put the other entry first; ``end_post_comp``
  launches the entry's first iteration in the background before the other entry and stops
  it when the other entry's last iteration has ended (status ``stopped``);
* agent-driven entries (``plan.route.check_single_sbatch`` made sure each has a grid): the
  grid unrolled in grid order (``Space.grid_point``), one step per trial in
  ``<test id>/<iteration>/<step>/``, as an offline DSE run numbers them;
  ``agent_steps`` caps the count (valid points, by default), env_params are sampled per step as the env does,
  and a point the workload's rule refuses is skipped: no step, as ``grid_search`` skips it.

After the allocation ends (or is cancelled by Ctrl-C), every step is recorded as a
separately submitted job would be (``finish_job``: job.json), and each agent-driven
iteration gets ``trajectory.csv`` (and ``env.csv``) in step order, plus ``best.toml``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.config.system import hf_home
from cloudai.errors import ConfigError, Interrupted
from cloudai.jobs.spec import build_spec, finish_job, job_dir, plain_values
from cloudai.run import Echo
from cloudai.systems.base import Job, JobStatus, System
from cloudai.systems.slurm.single_sbatch import (
    SCRIPT_NAME,
    ScriptStep,
    collect_steps,
    render_single_sbatch,
    submit_script,
)
from cloudai.workloads.validity import ValidPoints

if TYPE_CHECKING:
    from cloudai.config.scenario import RunEntry
    from cloudai.plan.load import Plan
    from cloudai.plan.route import CheckedEntry
    from cloudai.space import Space
    from cloudai.systems.slurm.system import SlurmSystem
    from cloudai.workloads.base import Workload

_SHOWN = 20  # dry-run lists this many steps, then counts the rest


@dataclass
class _Trial:
    """One grid point of an agent-driven iteration: a step of the script, or a constraint miss."""

    step: int
    action: dict[str, Any]
    env: dict[str, Any]
    name: str | None  # the script step's name; None when the constraint rejected the point
    reason: str = ""


@dataclass
class _Iteration:
    checked: CheckedEntry
    iteration: int
    out_dir: Path
    trials: list[_Trial] = field(default_factory=list)


@dataclass
class Layout:
    """The script's steps in order, and what each agent-driven iteration is made of."""

    steps: list[ScriptStep] = field(default_factory=list)
    iterations: list[_Iteration] = field(default_factory=list)


def run_single_sbatch(plan: Plan, run_dir: Path, system: System, echo: Echo) -> int:
    """Run the plan in one allocation; 1 when a plain job failed or an iteration had no successful trial."""
    slurm = _slurm(system)
    if next(run_dir.glob("*/*/**/job.json"), None) is not None:
        raise ConfigError(
            "--single-sbatch cannot resume: this results dir already holds jobs",
            file=run_dir,
            hint="resume without --single-sbatch, or start a new run",
        )
    workloads = plan.workloads()
    layout = build_steps(plan, run_dir, workloads)
    if not layout.steps:
        return _record(plan, layout, [], workloads, echo)
    allocation: Job | None = None
    try:
        allocation = submit_script(slurm, layout.steps, run_dir, plan.scenario.name)
        echo(f"Submitted {len(layout.steps)} step(s) as Slurm job {allocation.job_id}: {run_dir / SCRIPT_NAME}")
        while not allocation.done:
            slurm.wait([allocation], timeout=None)
    except KeyboardInterrupt:
        if allocation is None:  # nothing queued (an interrupted sbatch cancels what it queued)
            raise
        cancelled_at = time.time()
        slurm.cancel([allocation], "interrupted")
        _record(plan, layout, collect_steps(layout.steps, allocation, cancelled_at), workloads, echo)
        raise Interrupted(
            f"interrupted: cancelled the single sbatch job {allocation.job_id}; results so far in {run_dir}"
        ) from None
    if allocation.status is not JobStatus.OK:
        echo(f"the single sbatch job {allocation.job_id} ended {allocation.status}: {allocation.reason}")
    return _record(plan, layout, collect_steps(layout.steps, allocation), workloads, echo)


def dry_run_single_sbatch(plan: Plan, run_dir: Path, system: System, echo: Echo) -> None:
    """Write ``single_sbatch.sh`` into the results dir and list its steps; submit nothing."""
    slurm = _slurm(system)
    layout = build_steps(plan, run_dir, plan.workloads())
    for trial in (t for it in layout.iterations for t in it.trials if t.name is None):
        echo(f"  step {trial.step} skipped: {trial.reason}")
    if not layout.steps:
        echo("no step to run: every trial is rejected by its constraint")
        return
    script = run_dir / SCRIPT_NAME
    script.write_text(render_single_sbatch(layout.steps, slurm.config, run_dir, plan.scenario.name))
    for index, step in enumerate(layout.steps[:_SHOWN], start=1):
        background = f"  [background until {step.stop_after} ends]" if step.stop_after else ""
        echo(f"step {index}: {step.spec.name}: {' '.join(step.spec.argv)}{background}")
    if len(layout.steps) > _SHOWN:
        echo(f"... and {len(layout.steps) - _SHOWN} more step(s)")
    echo(f"one sbatch script, {len(layout.steps)} step(s): {script}")


def build_steps(plan: Plan, run_dir: Path, workloads: dict[str, Workload]) -> Layout:
    """The script's steps (see the module docstring). Raises ``ConfigError`` for what cannot be unrolled."""
    layout = Layout()
    install = Path(plan.system_config.install_path).absolute()
    hf = hf_home(plan.system_config)
    entries = ordered(plan.scenario.entries)
    last = {e.id: f"{e.id}.{e.iterations - 1}" for e in entries}
    for entry in entries:
        checked = plan.checked[entry.id]
        workload = workloads[entry.workload]
        if checked.agent_driven:
            for iteration in range(entry.iterations):
                gpus = getattr(plan.system_config, "gpus_per_node", None)
                layout.iterations.append(
                    _unroll(checked, workload, run_dir, iteration, layout.steps, (install, hf), gpus)
                )
            continue
        ends = [d.id for d in entry.dependencies if d.type == "end_post_comp"]
        for iteration in range(1 if ends else entry.iterations):  # stopped at once: later iterations never start
            directory = job_dir(run_dir, entry, iteration)
            spec = build_spec(
                entry,
                workload,
                plain_values(entry),
                directory,
                f"{entry.id}.{iteration}",
                install,
                getattr(plan.system_config, "gpus_per_node", None),
                hf,
            )
            if ends:
                reason = f"{ends[0]} completed (end_post_comp)"
                layout.steps.append(ScriptStep(spec, last[ends[0]], reason))
            else:
                layout.steps.append(ScriptStep(spec))
    return layout


def ordered(entries: Sequence[RunEntry]) -> list[RunEntry]:
    """Entries in an order the script can honour, scenario order where dependencies leave it free.

    ``start_post_*`` on A: A first. ``end_post_comp`` on A: this entry first (it runs in the
    background while A runs).
    """
    before: dict[str, set[str]] = {e.id: set() for e in entries}
    for entry in entries:
        for dep in entry.dependencies:
            if dep.type == "end_post_comp":
                before[dep.id].add(entry.id)
            else:
                before[entry.id].add(dep.id)
    done: list[RunEntry] = []
    left = list(entries)
    while left:
        ready = next((e for e in left if before[e.id] <= {d.id for d in done}), None)
        if ready is None:
            raise ConfigError(
                f"--single-sbatch cannot order the tests {', '.join(e.id for e in left)}: their dependencies "
                "(end_post_comp runs a test before the other) form a cycle",
                field="Tests.dependencies",
                hint="run this scenario without --single-sbatch",
            )
        done.append(ready)
        left.remove(ready)
    return done


def _unroll(
    checked: CheckedEntry,
    workload: Workload,
    run_dir: Path,
    iteration: int,
    steps: list[ScriptStep],
    paths: tuple[Path, Path],
    gpus_per_node: int | None,
) -> _Iteration:
    """``paths``: the system's install path and Hugging Face cache."""
    from cloudai.agents import AGENTS
    from cloudai.envs.env_params import sampler_for
    from cloudai.plan.agent_checks import agent_space, default_steps

    entry = checked.entry
    space = agent_space(entry, checked.space)
    sampler = sampler_for(entry, checked.space)
    nodes_set = "num_nodes" in entry.scenario_fields
    rule = ValidPoints(space, workload, gpus_per_node, frozenset(sampler.names if sampler else ()), nodes_set=nodes_set)
    valid = rule.count()
    count = default_steps(entry, checked.space, AGENTS.get(entry.agent.name), valid) or space.grid_size
    result = _Iteration(checked, iteration, run_dir / entry.id / str(iteration))
    index = -1
    for step in range(1, count + 1):  # the points the workload's rule refuses take no step (as in a DSE run)
        env = sampler.sample(step) if sampler else {}
        index = _next_valid(space, rule, index + 1, env)
        if index is None:
            break
        point = space.grid_point(index)
        name = f"{entry.id}.{iteration}.{step}"
        values = space.full({**point, **env})
        spec = build_spec(entry, workload, values, result.out_dir / str(step), name, paths[0], gpus_per_node, paths[1])
        steps.append(ScriptStep(spec))
        result.trials.append(_Trial(step, point, env, name))
    return result


def _next_valid(space: Space, rule: ValidPoints, index: int, env: dict[str, Any]) -> int | None:
    """The first grid index from ``index`` whose point (with this step's env_params) the rule allows."""
    while index < space.grid_size:
        found = rule.next_valid(index)
        if found is None or rule.violation(space.grid_point(found), env) is None:
            return found
        index = found + 1
    return None


def _record(plan: Plan, layout: Layout, jobs: list[Job], workloads: dict[str, Workload], echo: Echo) -> int:
    """job.json for every step, the trajectories of agent-driven iterations; the exit code."""
    by_name: dict[str, tuple[Job, dict[str, float]]] = {}
    code = 0
    for job in jobs:
        entry = _entry_of(plan, job)
        required = entry.agent.metrics if plan.checked[entry.id].agent_driven else ()
        by_name[job.spec.name] = (job, finish_job(job, workloads[entry.workload], required))
        if not plan.checked[entry.id].agent_driven and job.status not in (JobStatus.OK, JobStatus.STOPPED):
            code = 1
    for iteration in layout.iterations:
        code = max(code, _record_iteration(iteration, by_name, echo))
    return code


def _entry_of(plan: Plan, job: Job) -> RunEntry:
    """The entry a step belongs to: its name is ``<id>.<iteration>[.<step>]`` and ids may hold dots."""
    return max((e for e in plan.scenario.entries if job.spec.name.startswith(f"{e.id}.")), key=lambda e: len(e.id))


def _record_iteration(it: _Iteration, by_name: dict[str, tuple[Job, dict[str, float]]], echo: Echo) -> int:
    from cloudai.agents import AGENTS
    from cloudai.atomicfile import atomic_write
    from cloudai.envs.base import Feedback
    from cloudai.envs.outcome import trial_outcome
    from cloudai.envs.rewards import REWARDS
    from cloudai.plan.agent_checks import agent_config
    from cloudai.run.best import BEST_FILE, best_text
    from cloudai.trajectory.records import TrajectoryWriter

    entry = it.checked.entry
    metrics_order = list(entry.agent.metrics)
    penalty = agent_config(entry, AGENTS.get(entry.agent.name)).penalty_reward
    reward_fn = REWARDS.get(entry.agent.reward)
    sampler_names = sorted({name for t in it.trials for name in t.env})
    writer = TrajectoryWriter(it.out_dir, sampler_names)
    best: Feedback | None = None
    recorded = 0
    try:
        for trial in it.trials:
            if trial.name is None:  # infeasible: the workload's constraint, not run
                status, observation, metrics, elapsed = "infeasible", [math.nan] * len(metrics_order), {}, 0.0
                reward, reason = penalty, trial.reason
            elif trial.name not in by_name or by_name[trial.name][0].status is JobStatus.CANCELLED:
                continue  # never ended: not recorded, as in an interrupted DSE run
            else:
                job, metrics = by_name[trial.name]
                status, observation, reward, reason = trial_outcome(
                    job, metrics, metrics_order, entry.agent.constraints, reward_fn, penalty
                )
                elapsed = (job.ended_at - job.started_at) if job.ended_at and job.started_at else 0.0
            writer.append(step=trial.step, episode=1, action=trial.action, reward=reward, observation=observation,
                          status=status, elapsed_s=elapsed, env=trial.env, reason=reason)  # fmt: skip
            recorded += 1
            info = {"metrics": metrics, "env_params": trial.env}
            feedback = Feedback(trial.step, 1, trial.action, reward, observation, status, False, info)
            if status == "ok" and (best is None or reward > best.reward):
                best = feedback
    finally:
        writer.close()
    if best is None:
        echo(
            f"{entry.id}/{it.iteration}: no trial succeeded in {recorded} step(s); see {it.out_dir / 'trajectory.csv'}"
        )
        return 1
    path = atomic_write(it.out_dir / BEST_FILE, best_text(entry, it.checked.space, best, recorded))
    echo(f"{entry.id}/{it.iteration}: best of {recorded} step(s) is step {best.step}: reward {best.reward:.6g}")
    echo(f"  test TOML: {path}")
    return 0


def _slurm(system: System) -> SlurmSystem:
    from cloudai.systems.slurm.system import SlurmSystem

    if not isinstance(system, SlurmSystem):
        raise ConfigError(
            f"--single-sbatch needs a Slurm system; '{system.name}' is not one",
            field="scheduler",
            hint='pass --system-config with scheduler = "slurm", or drop --single-sbatch',
        )
    return system
