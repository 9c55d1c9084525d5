"""The ``cloudai`` command line. The only place errors become messages and exit codes.

Exit codes: 0 ok, 1 a job or trial failed (or an unexpected error), 2 bad input, 130 interrupted.
Heavy modules are imported inside the commands, so ``cloudai --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cloudai.cli.logs import LOG, VERBOSE, debug_log, log_file_option, log_options, log_plan, say, setup_logging
from cloudai.cli.running import How, run_in
from cloudai.cli.signals import interrupts_end_the_run
from cloudai.errors import CloudAIError, ConfigError, Stopped

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.systems.base import System


class _Group(click.Group):
    """Turns our errors into one message on stderr and an exit code; a traceback only with -v."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any):
        LOG.update(level=None, file=None)  # one invocation's flags (CliRunner runs many in one process)
        return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CloudAIError as exc:
            if VERBOSE["on"]:
                logging.getLogger("cloudai").exception("failed")
            for line in exc.problems if isinstance(exc, ConfigError) and exc.problems else [exc]:
                click.echo(f"error: {line}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            click.echo(f"error: stopped by {exc.signal_name}" if isinstance(exc, Stopped) else "error: interrupted",
                       err=True)  # fmt: skip
            ctx.exit(130)
        except OSError as exc:  # disk full, permissions: the user's to fix, not a bug to trace
            if VERBOSE["on"]:
                logging.getLogger("cloudai").exception("failed")
            where = f" ({exc.filename})" if exc.filename else ""
            click.echo(f"error: {exc.strerror or exc}{where}", err=True)
            ctx.exit(1)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # the last line of defence: a bug is one line, never a raw traceback
            logging.getLogger("cloudai").debug("internal error", exc_info=True)  # shown with -v, kept in --log-file
            click.echo(internal_error_line(exc, verbose=VERBOSE["on"]), err=True)
            ctx.exit(1)


def internal_error_line(exc: BaseException, *, verbose: bool) -> str:
    """One line for an unexpected exception: its type and message, and how to see more."""
    text = " ".join(str(exc).split())[:300] or "(no message)"
    more = "the traceback is above; please report" if verbose else "run with -v for the traceback; please report"
    return f"internal error: {type(exc).__name__}: {text} ({more})"


def _common(func: Callable[..., Any]) -> Callable[..., Any]:
    func = log_options(func)
    func = click.option("-v", "--verbose", is_flag=True, help="Log progress and show tracebacks.")(func)
    return click.option("--log-file", type=click.Path(path_type=Path, dir_okay=False), help="Also log to FILE.")(func)


SYSTEM_ENV = "CLOUDAI_SYSTEM_CONFIG"  # CloudAI's: --system-config falls back to it


def _system_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--system-config",
        type=click.Path(path_type=Path),
        envvar=SYSTEM_ENV,
        help=f"System TOML (else ${SYSTEM_ENV}; else this machine, standalone).",
    )(func)


def _tests_options(func: Callable[..., Any]) -> Callable[..., Any]:
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


def _scenario_options(func: Callable[..., Any]) -> Callable[..., Any]:
    path = click.Path(path_type=Path)
    for option in reversed(
        [
            _system_option,
            _tests_options,
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
@log_options
@log_file_option
def cli() -> None:
    """Design-space exploration for cluster workloads: run, sweep and search real jobs."""


@cli.command()
@_scenario_options
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


@cli.command(name="dry-run")
@_scenario_options
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


@cli.command(name="verify-configs")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tests-dir", type=click.Path(path_type=Path), help="Tests that scenarios refer to.")
@click.option("--hook-dir", type=click.Path(path_type=Path), help="Hook scenarios and their tests (as for run).")
@_common
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


@cli.command(name="list")
@click.argument("kind", required=False, type=click.Choice(LIST_KINDS, case_sensitive=False))
@click.option("-v", "--verbose", is_flag=True, help="Describe each one (fields, defaults, metrics).")
def list_(kind: str | None, verbose: bool) -> None:
    """List the workloads, agents, reward functions, systems and reports available (CloudAI: list agents|reports)."""
    from cloudai.cli.listing import listing

    setup_logging(False, None)  # `cloudai --log-file FILE list`: FILE is opened (or refused) as for any command

    for line in listing([kind.lower()] if kind else list(LIST_KINDS), verbose):
        click.echo(line)


@cli.command()
@_system_option
@_tests_options
@click.option("--test-scenario", type=click.Path(path_type=Path), help="Scenario TOML (default: every test).")
@click.option("--dry-run", "dry", is_flag=True, help="Say what would be installed; install nothing.")
@_common
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


@cli.command()
@_system_option
@_tests_options
@click.option("--test-scenario", type=click.Path(path_type=Path), help="Scenario TOML (default: every test).")
@_common
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


@cli.command()
@_system_option
@click.option("--tests-dir", type=click.Path(path_type=Path), required=True, help="Directory of test TOML files.")
@click.option("--test-scenario", type=click.Path(path_type=Path), required=True, help="Scenario TOML file.")
@click.option("--test-id", help="The agent-driven test to serve (default: the only one).")
@click.option("--output-dir", type=click.Path(path_type=Path), help="Results root (default: the system's output_path).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--token-var", default="CLOUDAI_SERVE_TOKEN", show_default=True, help="Env var holding the bearer token.")
@click.option("--max-sessions", type=click.IntRange(1, 64), default=1, show_default=True, help="WebSocket sessions.")
@click.option(
    "--insecure", is_flag=True, help="Allow listening beyond loopback without a token (anyone may run trials)."
)
@click.option(
    "--session-idle-timeout",
    type=click.FloatRange(min=0, min_open=True, max=366 * 86400),
    default=300.0,
    show_default=True,
    help="Close a WebSocket session that sends nothing for this many seconds.",
)
@click.option(
    "--lease",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Be a lease control plane on PORT instead: each lease runs its own `cloudai serve` of a test.",
)
@click.option(
    "--max-leases",
    type=click.IntRange(1, 1024),
    default=4,
    show_default=True,
    help="With --lease: at most this many live leases (429 beyond).",
)
@click.option(
    "--lease-idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="With --lease: release a lease no request named for this many seconds.",
)
@click.option(
    "--lease-start-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="With --lease: a sandbox not healthy this many seconds after its start is failed.",
)
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
    insecure: bool,
    session_idle_timeout: float,
    lease: int | None,
    max_leases: int,
    lease_idle_timeout: float,
    lease_start_timeout: float,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Serve one agent-driven test as an OpenEnv-compatible environment (WebSocket /ws, HTTP).

    With --lease PORT: a control plane that leases out sandboxes, each its own `cloudai serve` (USER_GUIDE).
    """

    setup_logging(verbose, log_file)
    from cloudai.gym.from_toml import load_env
    from cloudai.serve.app import create_app
    from cloudai.serve.run import bind, run
    from cloudai.systems.hidden_env import hide_env_var

    hide_env_var(token_var)  # the trials this server runs never inherit its token
    token = os.environ.get(token_var) or None
    if token is not None and not token.strip():  # "  " would be a token anyone guesses at once
        raise ConfigError(f"${token_var} holds only whitespace", field=token_var,
                          hint=f"set {token_var} to a secret (e.g. `openssl rand -hex 32`), or unset it")  # fmt: skip
    if token is None and host not in ("127.0.0.1", "localhost", "::1"):
        if not insecure:  # a trial is a real job on this machine: not for anyone on the network to start
            raise ConfigError(
                f"serving on {host} (beyond loopback) needs a token: anyone who reaches it could run trials here",
                field="--host",
                hint=f"set {token_var} (clients send it as a bearer token), or pass --insecure to allow it anyway",
            )
        click.echo(f"warning: serving on {host} without a token (--insecure): anyone may run trials", err=True)
    if lease is not None:
        from cloudai.cli.lease_serve import LeaseServe, serve_leases

        how = LeaseServe(system_config, tests_dir, test_scenario, test_id, output_dir, host, lease, token_var,
                         session_idle_timeout, max_leases, lease_idle_timeout, lease_start_timeout,
                         insecure)  # fmt: skip
        return serve_leases(how, token)
    sock = bind(host, port)
    loaded = load_env(tests_dir, test_scenario, test_id, system_config=system_config, output_dir=output_dir)
    app = create_app(
        loaded.env,
        name=loaded.checked.entry.id,
        token=token,
        max_sessions=max_sessions,
        session_idle_timeout_s=session_idle_timeout,
        new_env=loaded.another,  # each WebSocket session its own env: <results>/<test id>/<session number>
    )
    url = f"http://{host if ':' not in host else f'[{host}]'}:{sock.getsockname()[1]}"
    auth = f"bearer token from ${token_var}" if token else "no auth"
    where = f"{loaded.trial_dir} (HTTP) and {loaded.trial_dir.parent}/<n> (WebSocket session n)"
    click.echo(f"Serving '{loaded.checked.entry.id}' at {url} ({auth}); results in {where}")
    try:
        run(app, sock)  # until SIGINT/SIGTERM: raises Interrupted (exit 130)
    finally:
        click.echo(f"Stopped. Results: {loaded.trial_dir.parent}")


@cli.command(name="generate-report")
@click.argument("results_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--result-dir", "result_dir", type=click.Path(path_type=Path), help="CloudAI's spelling of RESULTS_DIR.")
@click.option("--system-config", type=click.Path(path_type=Path), help="Accepted (CloudAI); the results dir is read.")
@click.option("--tests-dir", type=click.Path(path_type=Path), help="Accepted (CloudAI); the results dir is read.")
@click.option("--test-scenario", type=click.Path(path_type=Path), help="Accepted (CloudAI); the results dir is read.")
@click.option("--hook-dir", type=click.Path(path_type=Path), help="Accepted (CloudAI); the results dir is read.")
@click.option(
    "--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the report (or comparison) here."
)
@click.option(
    "--compare-by",
    type=click.Choice(["test-name", "test-id"]),
    default="test-name",
    show_default=True,
    help="With several dirs: overlay the runs of one test name, or of one scenario test id (renamed tests).",
)
@_common
def generate_report(
    results_dirs: tuple[Path, ...],
    result_dir: Path | None,
    system_config: Path | None,
    tests_dir: Path | None,
    test_scenario: Path | None,
    hook_dir: Path | None,
    output: Path | None,
    compare_by: str,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Write report.html and summary.csv per results dir; with several dirs, also a comparison page.

    ``cloudai generate-report DIR...`` or CloudAI's ``--system-config S --tests-dir T --test-scenario F
    --result-dir R`` (the run's own ``run.json`` says what ran, so S, T and F are not re-read).
    """
    setup_logging(verbose, log_file)
    dirs = [*results_dirs, *([result_dir] if result_dir is not None else [])]
    if not dirs:
        raise click.UsageError("give the results dir: cloudai generate-report DIR (or --result-dir DIR)")
    from cloudai.reports import generate_report as generate

    click.echo(f"Report: {generate(dirs, output, compare_by.replace('-', '_'))}")


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


def main() -> None:
    cli()
