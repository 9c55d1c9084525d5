"""The options several commands share: logging, the system, the tests and hook dirs, a scenario's set; and the
command line as a user would type it again (for run.json)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cloudai.cli.logs import log_options


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = log_options(func)
    func = click.option("-v", "--verbose", is_flag=True, help="Log progress and show tracebacks.")(func)
    return click.option("--log-file", type=click.Path(path_type=Path, dir_okay=False), help="Also log to FILE.")(func)


SYSTEM_ENV = "CLOUDAI_SYSTEM_CONFIG"  # CloudAI's: --system-config falls back to it


def system_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--system-config",
        type=click.Path(path_type=Path),
        envvar=SYSTEM_ENV,
        help=f"System TOML (else ${SYSTEM_ENV}; else this machine, standalone).",
    )(func)


def tests_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--tests-dir`` (optional: tests may be defined inline in the scenario) and ``--hook-dir``, as CloudAI."""
    path = click.Path(path_type=Path)
    func = click.option("--hook-dir", type=path, help="Hook scenarios and their tests (default: conf/hook).")(func)
    return click.option("--tests-dir", type=path, help="Directory of test TOML files.")(func)


def system_source(system_config: Path | None) -> str:
    """Where the system's TOML came from, for the summary line: the flag, the variable, or the built-in default."""
    if system_config is None:
        return "built-in default (standalone: this machine)"
    source = click.get_current_context().get_parameter_source("system_config")
    if source is click.core.ParameterSource.ENVIRONMENT:
        return f"${SYSTEM_ENV}={system_config}"
    return f"--system-config {system_config}"


def command_line() -> str:
    """This command as a user would type it again (``cloudai run --tests-dir ...``), rebuilt from the parsed
    options rather than ``sys.argv`` (which is the test runner's under click's CliRunner)."""
    ctx = click.get_current_context()
    words = ["cloudai", *ctx.command_path.split()[1:]]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if value is None or value is False or value == param.default or not isinstance(param, click.Option):
            continue
        if ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.ENVIRONMENT:
            continue  # e.g. $CLOUDAI_SYSTEM_CONFIG: the summary line says it came from there
        words += [param.opts[-1]] if param.is_flag else [param.opts[-1], str(value)]
    return shlex.join(words)


def scenario_options(func: Callable[..., Any]) -> Callable[..., Any]:
    path = click.Path(path_type=Path)
    for option in reversed(
        [
            system_option,
            tests_options,
            click.option("--test-scenario", type=path, required=True, help="Scenario TOML file."),
            click.option("--output-dir", type=path, help="Results root (default: the system's output_path)."),
            click.option("--single-sbatch", is_flag=True, help="Slurm: one sbatch script for the whole scenario."),
            click.option("--enable-cache-without-check", is_flag=True, help="Accepted for CloudAI compatibility."),
        ]
    ):
        func = option(func)
    return common_options(func)
