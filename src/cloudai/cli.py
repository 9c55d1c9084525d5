"""The ``cloudai`` command line. The only place errors become messages and exit codes.

Exit codes: 0 ok, 1 a job or trial failed (or an unexpected error), 2 bad input, 130 interrupted.
Heavy modules are imported inside the commands, so ``cloudai --help`` stays fast.
"""

from __future__ import annotations

import logging
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cloudai.errors import CloudAIError, ConfigError

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.systems.base import System

_VERBOSE = {"on": False}


class _Group(click.Group):
    """Turns our errors into one message on stderr and an exit code; a traceback only with -v."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CloudAIError as exc:
            if _VERBOSE["on"]:
                logging.getLogger("cloudai").exception("failed")
            for line in exc.problems if isinstance(exc, ConfigError) and exc.problems else [exc]:
                click.echo(f"error: {line}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            ctx.exit(130)
        except OSError as exc:  # disk full, permissions: the user's to fix, not a bug to trace
            if _VERBOSE["on"]:
                logging.getLogger("cloudai").exception("failed")
            where = f" ({exc.filename})" if exc.filename else ""
            click.echo(f"error: {exc.strerror or exc}{where}", err=True)
            ctx.exit(1)


def _setup_logging(verbose: bool, log_file: Path | None) -> None:
    _VERBOSE["on"] = verbose
    root = logging.getLogger("cloudai")
    root.setLevel(logging.DEBUG)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(console)
    if log_file is not None:
        try:
            handler = logging.FileHandler(log_file)
        except OSError as exc:
            raise ConfigError(f"cannot open the log file: {exc.strerror}", file=log_file) from None
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)


def _sigterm_as_interrupt() -> None:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def _common(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("-v", "--verbose", is_flag=True, help="Log progress and show tracebacks.")(func)
    return click.option("--log-file", type=click.Path(path_type=Path, dir_okay=False), help="Also log to FILE.")(func)


def _scenario_options(func: Callable[..., Any]) -> Callable[..., Any]:
    path = click.Path(path_type=Path)
    for option in reversed(
        [
            click.option("--system-config", type=path, help="System TOML (default: this machine, standalone)."),
            click.option("--tests-dir", type=path, required=True, help="Directory of test TOML files."),
            click.option("--test-scenario", type=path, required=True, help="Scenario TOML file."),
            click.option("--output-dir", type=path, help="Results root (default: the system's output_path)."),
            click.option("--single-sbatch", is_flag=True, help="Slurm: one sbatch script for the whole scenario."),
            click.option("--enable-cache-without-check", is_flag=True, help="Accepted for CloudAI compatibility."),
        ]
    ):
        func = option(func)
    return _common(func)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cloudai")
def cli() -> None:
    """Design-space exploration for cluster workloads: run, sweep and search real jobs."""


@cli.command()
@_scenario_options
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False), help="Continue the run in this dir.")
def run(
    system_config: Path | None,
    tests_dir: Path,
    test_scenario: Path,
    output_dir: Path | None,
    single_sbatch: bool,
    enable_cache_without_check: bool,
    verbose: bool,
    log_file: Path | None,
    resume: Path | None,
) -> None:
    """Run a scenario: plain tests as jobs, agent-driven tests through their agent."""
    from cloudai.run.plain import run_plain
    from cloudai.run.rundir import create_run_dir, output_root, write_run_manifest

    plan, system = _prepare(system_config, tests_dir, test_scenario, single_sbatch, verbose, log_file)
    system.check()
    if resume is not None:  # plain runs too: never write into another scenario's results
        from cloudai.run.dse import check_resume

        check_resume(plan, resume)
    run_dir = resume if resume is not None else create_run_dir(output_root(plan, output_dir), plan.scenario.name)
    if resume is None:
        write_run_manifest(plan, run_dir)
    _sigterm_as_interrupt()
    click.echo(f"Running scenario '{plan.scenario.name}' on {system.name}; results in {run_dir}")
    try:
        if single_sbatch:
            from cloudai.run.single_sbatch import run_single_sbatch

            code = run_single_sbatch(plan, run_dir, system, click.echo)
        elif plan.agent_driven:
            from cloudai.run.dse import resume_command, run_agent_entries

            again = resume_command(system_config, tests_dir, test_scenario, run_dir)
            code = run_agent_entries(plan, run_dir, system, click.echo, resume is not None, resume_command=again)
        else:
            code = run_plain(plan, run_dir, system)
    except ConfigError:  # bad input only found once the run began (e.g. a live server's constructor)
        if resume is None and not _has_results(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)  # bad input leaves no output dir behind
        raise
    finally:
        system.cancel_all()  # nothing outlives the run, whatever stopped it
        if run_dir.is_dir():
            _report(run_dir)
    click.echo(f"Results: {run_dir}")
    sys.exit(code)


@cli.command(name="dry-run")
@_scenario_options
def dry_run(
    system_config: Path | None,
    tests_dir: Path,
    test_scenario: Path,
    output_dir: Path | None,
    single_sbatch: bool,
    enable_cache_without_check: bool,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Validate everything and write what would run into the results dir, without running it."""
    from cloudai.run.plain import dry_run_plain
    from cloudai.run.rundir import create_run_dir, output_root, write_run_manifest

    plan, system = _prepare(system_config, tests_dir, test_scenario, single_sbatch, verbose, log_file)
    run_dir = create_run_dir(output_root(plan, output_dir), plan.scenario.name)
    write_run_manifest(plan, run_dir)
    if single_sbatch:
        from cloudai.run.single_sbatch import dry_run_single_sbatch

        dry_run_single_sbatch(plan, run_dir, system, click.echo)
    elif plan.agent_driven:
        from cloudai.run.dry_run import dry_run_entries

        dry_run_entries(plan, run_dir, system, click.echo)
    else:
        dry_run_plain(plan, run_dir, system, click.echo)
    click.echo(f"Dry run: nothing was run; scripts in {run_dir}")


@cli.command(name="verify-configs")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tests-dir", type=click.Path(path_type=Path), help="Tests that scenarios refer to.")
@_common
def verify_configs(paths: tuple[Path, ...], tests_dir: Path | None, verbose: bool, log_file: Path | None) -> None:
    """Validate system, test and scenario files (or directories of them); report every error."""
    _setup_logging(verbose, log_file)
    from cloudai.plan.verify import verify_paths

    checked, problems = verify_paths(list(paths), tests_dir)
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    click.echo(f"{checked} file(s) checked, {len(problems)} problem(s)")
    sys.exit(2 if problems else 0)


@cli.command(name="list")
def list_() -> None:
    """List the workloads, agents, reward functions and systems available."""
    from cloudai.agents import AGENTS
    from cloudai.envs.rewards import REWARDS
    from cloudai.systems import SYSTEMS
    from cloudai.workloads import WORKLOADS

    for title, registry in (
        ("Workloads", WORKLOADS),
        ("Agents", AGENTS),
        ("Reward functions", REWARDS),
        ("Systems", SYSTEMS),
    ):
        click.echo(f"{title}:")
        for name in registry.names():
            click.echo(f"  {name}")
            if registry is AGENTS:
                from cloudai.agents.describe import describe_agent

                for line in describe_agent(AGENTS.get(name)):
                    click.echo(f"      {line}")


@cli.command()
@click.option("--system-config", type=click.Path(path_type=Path), help="System TOML (default: this machine).")
@click.option("--tests-dir", type=click.Path(path_type=Path), required=True, help="Directory of test TOML files.")
@click.option("--test-scenario", type=click.Path(path_type=Path), required=True, help="Scenario TOML file.")
@click.option("--test-id", help="The agent-driven test to serve (default: the only one).")
@click.option("--output-dir", type=click.Path(path_type=Path), help="Results root (default: the system's output_path).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--token-var", default="CLOUDAI_SERVE_TOKEN", show_default=True, help="Env var holding the bearer token.")
@click.option("--max-sessions", type=click.IntRange(1, 64), default=1, show_default=True, help="WebSocket sessions.")
@_common
def serve(
    system_config: Path | None,
    tests_dir: Path,
    test_scenario: Path,
    test_id: str | None,
    output_dir: Path | None,
    host: str,
    port: int,
    token_var: str,
    max_sessions: int,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Serve one agent-driven test as an OpenEnv-compatible environment (WebSocket /ws, HTTP)."""
    import os

    _setup_logging(verbose, log_file)
    from cloudai.gym.from_toml import load_env
    from cloudai.serve.app import create_app
    from cloudai.serve.run import bind, run

    token = os.environ.get(token_var) or None
    if token is None and host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: serving on {host} without a token; set {token_var} to require one", err=True)
    sock = bind(host, port)
    loaded = load_env(tests_dir, test_scenario, test_id, system_config=system_config, output_dir=output_dir)
    app = create_app(loaded.env, name=loaded.checked.entry.id, token=token, max_sessions=max_sessions)
    url = f"http://{host if ':' not in host else f'[{host}]'}:{sock.getsockname()[1]}"
    auth = f"bearer token from ${token_var}" if token else "no auth"
    click.echo(f"Serving '{loaded.checked.entry.id}' at {url} ({auth}); results in {loaded.trial_dir}")
    try:
        run(app, sock)  # until SIGINT/SIGTERM: raises Interrupted (exit 130)
    finally:
        click.echo(f"Stopped. Results: {loaded.trial_dir}")


@cli.command(name="generate-report")
@click.argument("results_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the report (or comparison) here."
)
@_common
def generate_report(results_dirs: tuple[Path, ...], output: Path | None, verbose: bool, log_file: Path | None) -> None:
    """Write report.html and summary.csv per results dir; with several dirs, also a comparison page."""
    _setup_logging(verbose, log_file)
    from cloudai.reports import generate_report as generate

    click.echo(f"Report: {generate(list(results_dirs), output)}")


def _prepare(
    system_config: Path | None,
    tests_dir: Path,
    test_scenario: Path,
    single_sbatch: bool,
    verbose: bool,
    log_file: Path | None,
) -> tuple[Plan, System]:
    """Logging set up, every file loaded and checked, flags checked, the system built: nothing written yet."""
    _setup_logging(verbose, log_file)
    from cloudai.plan.load import build_system, load_plan

    plan = load_plan(system_config, tests_dir, test_scenario)
    _check_flags(plan, single_sbatch)
    return plan, build_system(plan.system_config)


def _check_flags(plan: Any, single_sbatch: bool) -> None:
    """Flag combinations the plan cannot honour (e.g. ``--single-sbatch`` with live RL): exit 2, nothing written."""
    from cloudai.plan.route import check_single_sbatch

    problems = check_single_sbatch(plan.checked, single_sbatch, getattr(plan.system_config, "scheduler", ""))
    if problems:
        raise ConfigError(problems=problems)


def _has_results(run_dir: Path) -> bool:
    """Whether anything ran into ``run_dir``: a job record or a recorded step."""
    if any(run_dir.rglob("job.json")):
        return True
    return any(len(path.read_bytes().splitlines()) > 1 for path in run_dir.rglob("trajectory.csv"))  # beyond a header


def _report(run_dir: Path) -> None:
    """The report and terminal summary of what finished, also after a failure or Ctrl-C.

    A report that cannot be written must not mask the run's own outcome: it is a warning.
    """
    from cloudai.errors import CloudAIError
    from cloudai.reports import generate_report, print_summary

    try:
        generate_report([run_dir])
        print_summary(run_dir)  # ends with where the report is
    except (CloudAIError, OSError, ValueError) as exc:
        click.echo(f"warning: no report for {run_dir}: {exc}", err=True)


def main() -> None:
    cli()
