"""The commands about configuration, not runs: ``verify-configs``, ``list``, ``install``, ``uninstall``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from cloudai.cli.logs import setup_logging
from cloudai.cli.options import common_options, system_option, tests_options


@click.command(name="verify-configs")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tests-dir", type=click.Path(path_type=Path), help="Tests that scenarios refer to.")
@click.option("--hook-dir", type=click.Path(path_type=Path), help="Hook scenarios and their tests (as for run).")
@common_options
def verify_configs(
    paths: tuple[Path, ...], tests_dir: Path | None, hook_dir: Path | None, verbose: bool, log_file: Path | None
) -> None:
    """Validate system, test and scenario files (or directories of them); report every error."""
    setup_logging(verbose, log_file)
    from cloudai.plan.verify import install_notes, verify_paths

    checked, problems, notes = verify_paths(list(paths), tests_dir, hook_dir)
    for note in [*notes, *install_notes(list(paths))]:
        click.echo(note)
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    click.echo(f"{checked} file(s) checked, {len(problems)} problem(s)")
    sys.exit(2 if problems else 0)


LIST_KINDS = ("workloads", "agents", "rewards", "systems", "reports")


@click.command(name="list")
@click.argument("kind", required=False, type=click.Choice(LIST_KINDS, case_sensitive=False))
@click.option("-v", "--verbose", is_flag=True, help="Describe each one (fields, defaults, metrics).")
def list_(kind: str | None, verbose: bool) -> None:
    """List the workloads, agents, reward functions, systems and reports available (CloudAI: list agents|reports)."""
    from cloudai.cli.listing import listing

    setup_logging(False, None)  # `cloudai --log-file FILE list`: FILE is opened (or refused) as for any command

    for line in listing([kind.lower()] if kind else list(LIST_KINDS), verbose):
        click.echo(line)


@click.command()
@system_option
@tests_options
@click.option("--test-scenario", type=click.Path(path_type=Path), help="Scenario TOML (default: every test).")
@click.option("--dry-run", "dry", is_flag=True, help="Say what would be installed; install nothing.")
@common_options
def install(
    system_config: Path | None,
    tests_dir: Path | None,
    hook_dir: Path | None,
    test_scenario: Path | None,
    dry: bool,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Install what the scenario's (or the tests dir's) workloads need under the system's install_path."""
    setup_logging(verbose, log_file)
    from cloudai.plan.install import install_all

    install_all(_needs(system_config, tests_dir, hook_dir, test_scenario), dry=dry, echo=click.echo)


@click.command()
@system_option
@tests_options
@click.option("--test-scenario", type=click.Path(path_type=Path), help="Scenario TOML (default: every test).")
@common_options
def uninstall(
    system_config: Path | None,
    tests_dir: Path | None,
    hook_dir: Path | None,
    test_scenario: Path | None,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Remove what ``cloudai install`` put under the system's install_path for these workloads."""
    setup_logging(verbose, log_file)
    from cloudai.plan.install import uninstall_all

    uninstall_all(_needs(system_config, tests_dir, hook_dir, test_scenario), echo=click.echo)


def _needs(system_config: Path | None, tests_dir: Path | None, hook_dir: Path | None, scenario: Path | None) -> Any:
    from cloudai.plan.install import needs_of_plan, needs_of_tests

    if scenario is not None:
        from cloudai.plan.load import load_plan

        return needs_of_plan(load_plan(system_config, tests_dir, scenario, hook_dir))
    if tests_dir is None:
        raise click.UsageError("give --test-scenario FILE or --tests-dir DIR (what to install for)")
    from cloudai.config.system import load_system

    return needs_of_tests(load_system(system_config), tests_dir)
