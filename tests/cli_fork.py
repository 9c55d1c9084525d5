"""The real CLI in a fresh process that starts in milliseconds: a fork of a warm interpreter.

For suites that run the CLI on many inputs (the bad-input corpus, end-to-end runs): each call is still
its own process, with its own cwd, exit code, stdout and stderr, but it skips the interpreter's and
cloudai's import start-up (~0.3 s of CPU a call, ~0.8 s more for a run and its report).
multiprocessing's forkserver does the forking: a clean, single-threaded server process with
``cloudai.cli`` and what a run loads preloaded, so no lock held by a thread of the test process
(xdist's, a thread pool's) can be inherited by a child.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_CTX = multiprocessing.get_context("forkserver")
# What a ``cloudai run`` loads after the CLI (runner, agents, the end-of-run report, optuna), loaded once per
# test worker instead of once per run; every module reads its settings (the environment included) at call
# time, so a child behaves as a fresh ``cloudai`` would.
_RUN_MODULES = [
    "cloudai.run.dse",
    "cloudai.run.plain",
    "cloudai.systems.standalone",
    "cloudai.agents.random_search",
    "cloudai.agents.optuna_agent",
    "cloudai.reports.generate",
    "cloudai.reports.analysis",
    "cloudai.reports.summary",
    "cloudai.reports.render",
    "optuna",
]
_CTX.set_forkserver_preload(["cloudai.cli", "cloudai.config.scenario", "cloudai.plan.load", *_RUN_MODULES, __name__])


def _child(argv: list[str], cwd: str, env: dict[str, str], out: str, err: str, status: str) -> None:
    """Runs in the forked child: the CLI exactly as ``python -m cloudai ARGV`` would, then exits."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)  # noqa: SIM115
    from cloudai.cli import cli

    try:
        cli.main(args=argv, prog_name="cloudai")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    Path(status).write_text(str(code))  # the exit code, also when the fork server cannot report it (it says 255)
    os._exit(code)


def run_cli(
    argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``cloudai ARGV`` in a forked child, like ``subprocess.run``: ``cwd`` and ``env`` default to the
    caller's current ones (not the fork server's), and the exit code and output come back."""
    with tempfile.TemporaryDirectory(prefix="cloudai-cli-") as tmp:
        out, err, status = Path(tmp, "stdout"), Path(tmp, "stderr"), Path(tmp, "status")
        env = dict(os.environ if env is None else env)
        child = _CTX.Process(target=_child, args=(argv, str(cwd or os.getcwd()), env, str(out), str(err), str(status)))
        child.start()
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(["cloudai", *argv], timeout)
        code = int(status.read_text()) if status.exists() else child.exitcode
        return subprocess.CompletedProcess(["cloudai", *argv], code, out.read_text(), err.read_text())
