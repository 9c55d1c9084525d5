"""``cloudai serve``: one agent-driven test as an OpenEnv-compatible environment, or a lease control plane."""

from __future__ import annotations

import os
from pathlib import Path

import click

from cloudai.cli.logs import setup_logging
from cloudai.cli.options import common_options, system_option
from cloudai.errors import ConfigError


@click.command()
@system_option
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
    "--exit-when-idle",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop once no client used the server for this many seconds (a sandbox run as a Slurm job sets it).",
)
@click.option(
    "--lease",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Be a lease control plane on PORT instead: each lease runs its own `cloudai serve` of a test "
    "(as a Slurm job when --system-config is a Slurm system).",
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
@click.option(
    "--lease-time-limit",
    type=click.FloatRange(min=1),
    help="With --lease on a Slurm system: each sandbox job's time limit in seconds (default: the partition's).",
)
@common_options
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
    exit_when_idle: float | None,
    lease: int | None,
    max_leases: int,
    lease_idle_timeout: float,
    lease_start_timeout: float,
    lease_time_limit: float | None,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Serve one agent-driven test as an OpenEnv-compatible environment (WebSocket /ws, HTTP).

    With --lease PORT: a control plane that leases out sandboxes, each its own `cloudai serve` (docs/leases.md).
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

        if exit_when_idle is not None:
            raise ConfigError("it stops a `cloudai serve`, not a control plane (--lease)", field="--exit-when-idle",
                              hint="drop it: --lease-idle-timeout is the leases' own")  # fmt: skip

        how = LeaseServe(system_config, tests_dir, test_scenario, test_id, output_dir, host, lease, token_var,
                         session_idle_timeout, max_leases, lease_idle_timeout, lease_start_timeout,
                         insecure, lease_time_limit)  # fmt: skip
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
        run(app, sock, exit_when_idle_s=exit_when_idle)  # until SIGINT/SIGTERM: raises Interrupted (exit 130)
    finally:
        click.echo(f"Stopped. Results: {loaded.trial_dir.parent}")
