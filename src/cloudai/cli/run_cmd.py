"""``cloudai run`` and ``cloudai dry-run``: a scenario loaded, checked and run (or written out without running)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cloudai.cli.logs import debug_log, log_plan, say, setup_logging
from cloudai.cli.options import command_line, scenario_options, system_source
from cloudai.cli.running import How, run_in
from cloudai.cli.signals import interrupts_end_the_run
from cloudai.errors import ConfigError

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.systems.base import System


@click.command()
@scenario_options
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False), help="Continue the run in this dir.")
@click.option(
    "--warm-start",
    "warm_start",
    metavar="DIR[,DIR...]",
    help="A new run whose agents first learn from these earlier runs' trials (same test ids).",
)
def run(
    system_config: Path | None,
    tests_dir: Path | None,
    hook_dir: Path | None,
    test_scenario: Path,
    output_dir: Path | None,
    single_sbatch: bool,
    enable_cache_without_check: bool,
    verbose: bool,
    log_file: Path | None,
    resume: Path | None,
    warm_start: str | None,
) -> None:
    """Run a scenario: plain tests as jobs, agent-driven tests through their agent."""
    from cloudai.plan.load import node_needs
    from cloudai.run.dse import RunFiles
    from cloudai.run.lock import lock_results_dir
    from cloudai.run.rundir import create_run_dir, output_root, write_run_manifest
    from cloudai.run.warm import check_warm_dirs, parse_warm_dirs

    plan, system = _prepare(system_config, tests_dir, hook_dir, test_scenario, single_sbatch, verbose, log_file)
    _check_installed(plan, required=True)
    system.check()
    system.preflight(node_needs(plan))
    system.notify = say
    files = RunFiles(system_config, tests_dir, test_scenario, hook_dir)
    warm_dirs = parse_warm_dirs(warm_start)
    if warm_dirs:
        check_warm_dirs(plan, warm_dirs)
    if resume is not None:  # plain runs too: never write into another scenario's results
        from cloudai.run.dse import check_resume, warm_start_command

        check_resume(plan, resume, warm_start_command(files, resume))
        lock_results_dir(resume)  # one writer per results dir: a second resume of it is exit 2, naming the pid
    root = output_root(plan, output_dir)
    fresh_root = not root.exists()  # made by this run: removed again when bad input stops it before any result
    run_dir = resume if resume is not None else create_run_dir(root, plan.scenario.name)
    if resume is None:
        write_run_manifest(plan, run_dir, command_line())
        lock_results_dir(run_dir)
    how = How(files, single_sbatch, resume, warm_dirs, root if fresh_root else None)
    with interrupts_end_the_run(), debug_log(run_dir):
        where = f"on {system.name} (system: {system_source(system_config)})"
        say(f"Running scenario '{plan.scenario.name}' {where}; results in {run_dir}")
        log_plan(plan, sys.argv)
        with workload_sessions(plan, system):
            code = run_in(plan, system, run_dir, how)
        say(f"Results: {run_dir}")
    sys.exit(code)


@click.command(name="dry-run")
@scenario_options
def dry_run(
    system_config: Path | None,
    tests_dir: Path | None,
    hook_dir: Path | None,
    test_scenario: Path,
    output_dir: Path | None,
    single_sbatch: bool,
    enable_cache_without_check: bool,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Validate everything and write what would run into the results dir, without running it."""
    from cloudai.plan.load import node_needs
    from cloudai.run.plain import dry_run_plain
    from cloudai.run.rundir import create_run_dir, output_root, write_run_manifest

    plan, system = _prepare(system_config, tests_dir, hook_dir, test_scenario, single_sbatch, verbose, log_file)
    _check_installed(plan, required=False)
    system.preflight(node_needs(plan), live=False)
    run_dir = create_run_dir(output_root(plan, output_dir), plan.scenario.name)
    write_run_manifest(plan, run_dir, command_line())
    with debug_log(run_dir):
        say(f"Dry run of scenario '{plan.scenario.name}' on {system.name} (system: {system_source(system_config)})")
        log_plan(plan, sys.argv)
        if single_sbatch:
            from cloudai.run.single_sbatch import dry_run_single_sbatch

            dry_run_single_sbatch(plan, run_dir, system, say)
        elif plan.agent_driven:
            from cloudai.run.dry_run import dry_run_entries
            from cloudai.run.hooks import dry_run_hooks

            dry_run_hooks(plan, "pre_test", run_dir, system, say)
            dry_run_entries(plan, run_dir, system, say)
            dry_run_hooks(plan, "post_test", run_dir, system, say)
        else:
            dry_run_plain(plan, run_dir, system, say)
        say(f"Dry run: nothing was run; scripts in {run_dir}")


def _prepare(
    system_config: Path | None,
    tests_dir: Path | None,
    hook_dir: Path | None,
    test_scenario: Path,
    single_sbatch: bool,
    verbose: bool,
    log_file: Path | None,
) -> tuple[Plan, System]:
    """Logging set up, every file loaded and checked, flags checked, the system built: nothing written yet."""
    setup_logging(verbose, log_file)
    from cloudai.plan.load import build_system, load_plan

    plan = load_plan(system_config, tests_dir, test_scenario, hook_dir)
    _check_flags(plan, single_sbatch)
    return plan, build_system(plan.system_config)


@contextlib.contextmanager
def workload_sessions(plan: Plan, system: System) -> Iterator[None]:
    """Each workload's ``session`` held open around the run when its jobs run on this machine (a warm worker)."""
    with contextlib.ExitStack() as stack:
        if system.local_jobs:
            for workload in plan.workloads().values():
                stack.enter_context(workload.session(system.install_path))
        yield


def _check_installed(plan: Plan, *, required: bool) -> None:
    """What ``cloudai install`` put in place, and the args it cannot run (``install_problems``): exit 2."""
    from cloudai.plan.install import install_problems

    problems = install_problems(plan, required=required)
    if problems:
        raise ConfigError(problems=problems)


def _check_flags(plan: Any, single_sbatch: bool) -> None:
    """Flag combinations the plan cannot honour (e.g. ``--single-sbatch`` with live RL): exit 2, nothing written."""
    from cloudai.plan.route import check_single_sbatch

    problems = check_single_sbatch(plan.checked, single_sbatch, getattr(plan.system_config, "scheduler", ""))
    if problems:
        raise ConfigError(problems=problems)
