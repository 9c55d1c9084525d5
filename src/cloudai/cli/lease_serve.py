"""``cloudai serve --lease PORT``: the scenario's agent-driven tests leased out, each lease its own ``cloudai serve``.

A lease's ``environment`` names the test (its id in the scenario; omitted: ``--test-id``, else the only
agent-driven one). Each lease runs ``cloudai serve`` of that test on a free port of the same ``--host``, in a
process of its own (its results in its own dir under the output root), with the same token variable, so the
client's one bearer token opens both the control plane and its sandboxes. With a Slurm ``--system-config``
each sandbox is a Slurm job instead (``cloudai.serve.slurm_sandbox``): its ``cloudai serve`` runs the test on
the job's node (standalone there), its results and job files under ``<output root>/sandboxes/<n>``. The
control plane itself: ``cloudai.serve.control``."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import ConfigError
from cloudai.systems.slurm.system import SlurmSystem


@dataclass(frozen=True)
class LeaseServe:
    """What ``cloudai serve --lease`` was asked for."""

    system_config: Path | None
    tests_dir: Path
    test_scenario: Path
    test_id: str | None
    output_dir: Path | None
    host: str
    port: int
    token_var: str
    session_idle_timeout: float
    max_leases: int
    lease_idle_timeout: float
    lease_start_timeout: float
    insecure: bool = False
    lease_time_limit: float | None = None  # a Slurm sandbox job's --time (None: the partition's)


def serve_leases(how: LeaseServe, token: str | None) -> None:
    """Check the scenario, bind, serve the control plane until SIGINT/SIGTERM (``Interrupted``, exit 130)."""
    from cloudai.plan.load import load_plan
    from cloudai.serve.control import create_control_app, run_control_plane
    from cloudai.serve.run import bind
    from cloudai.serve.sandboxes import Board

    plan = load_plan(how.system_config, how.tests_dir, how.test_scenario, None)
    tests = [i for i, c in plan.checked.items() if c.agent_driven]
    if not tests or (how.test_id is not None and how.test_id not in tests):
        raise ConfigError(
            f"no agent-driven test {how.test_id or ''} to lease out (agent-driven: {', '.join(tests) or 'none'})",
            file=how.test_scenario,
            field="--test-id",
        )
    on_slurm = isinstance(plan.system_config, SlurmSystemConfig)
    if how.lease_time_limit is not None and not on_slurm:
        raise ConfigError("it is a Slurm sandbox job's time limit, and this system is not Slurm",
                          field="--lease-time-limit", hint="drop it, or pass a Slurm --system-config")  # fmt: skip
    if on_slurm:
        SlurmSystem(plan.system_config).check()  # before anything listens: the tools and the controller answer
    sock = bind(how.host, how.port)
    argv = slurm_sandbox_argv if on_slurm else sandbox_argv
    root = how.output_dir or getattr(plan.system_config, "output_path", Path("results"))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    board = Board(lambda name, options: argv(how, tests, name, options, root), max_leases=how.max_leases,
                  idle_timeout_s=how.lease_idle_timeout, start_timeout_s=how.lease_start_timeout,
                  headers=headers)  # fmt: skip
    app = create_control_app(board, token=token)
    url = f"http://{how.host if ':' not in how.host else f'[{how.host}]'}:{sock.getsockname()[1]}"
    auth = f"bearer token from ${how.token_var}" if token else "no auth"
    click.echo(f"Leasing {', '.join(tests)} at {url} ({auth}; at most {how.max_leases} live leases)")
    try:
        run_control_plane(app, board, sock)
    finally:
        click.echo("Stopped: every lease released")


def sandbox_argv(
    how: LeaseServe, tests: list[str], name: str | None, options: Mapping[str, Any], root: Path | None = None
) -> list[str]:
    """``cloudai serve`` of the named test on a free port of the control plane's ``--host`` (so a client that reaches
    the one reaches the other); ``BadLease`` for a name or option it lacks."""
    from cloudai.serve.control import BadLease

    if options:
        raise BadLease(f"cloudai serve --lease takes no options (got {', '.join(sorted(options))})")
    test = name or how.test_id or (tests[0] if len(tests) == 1 else None)
    if test is None or test not in tests:
        raise BadLease(f"no environment {name!r}: name one of {', '.join(tests)}" if name else
                       f"name the environment: one of {', '.join(tests)}")  # fmt: skip
    argv = [sys.executable, "-m", "cloudai", "serve", "--tests-dir", str(how.tests_dir.resolve()),
            "--test-scenario", str(how.test_scenario.resolve()), "--test-id", test, "--host", how.host,
            "--port", "0", "--token-var", how.token_var,
            "--session-idle-timeout", str(how.session_idle_timeout)]  # fmt: skip
    if how.system_config is not None:
        argv += ["--system-config", str(how.system_config.resolve())]
    if how.output_dir is not None:
        argv += ["--output-dir", str(how.output_dir.resolve())]
    return [*argv, "--insecure"] if how.insecure else argv


def slurm_sandbox_argv(
    how: LeaseServe, tests: list[str], name: str | None, options: Mapping[str, Any], root: Path | None = None
) -> list[str]:
    """The keeper of one sandbox job (``cloudai.serve.slurm_sandbox``): ``sandbox_argv`` run on a node, standalone
    there (no ``--system-config``), its results under ``root``, stopping itself after the lease idle timeout."""
    assert root is not None
    local = replace(how, system_config=None, output_dir=root)
    serve = [*sandbox_argv(local, tests, name, options), "--exit-when-idle", str(how.lease_idle_timeout)]
    assert how.system_config is not None
    job_dir = root.resolve() / "sandboxes" / uuid.uuid4().hex[:12]
    keeper = [sys.executable, "-m", "cloudai.serve.slurm_sandbox", "--system-config", str(how.system_config.resolve()),
              "--job-dir", str(job_dir), "--token-var", how.token_var]  # fmt: skip
    if how.lease_time_limit is not None:
        keeper += ["--time-limit", str(how.lease_time_limit)]
    return [*keeper, "--", *serve]
