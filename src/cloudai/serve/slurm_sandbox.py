"""A lease's sandbox as a Slurm job: ``python -m cloudai.serve.slurm_sandbox`` is the control plane's child for it.

``cloudai serve --lease --system-config <slurm system>`` starts this keeper (a small local process) for each lease,
in place of a local ``cloudai serve``, so the lease board (``cloudai.serve.sandboxes``) treats both alike:

* it submits one job (``SlurmSystem.submit``: the system's partition, account, ``#SBATCH`` lines) that runs
  ``cloudai serve`` of the test on the node, on a free port, with ``--exit-when-idle``; the job's stdout
  (``stdout.txt`` in the job dir, under the control plane's output dir, which the node must share) carries that
  server's banner. The keeper polls it (one read and one ``squeue`` per ``poll_interval_s``) and prints
  ``Sandbox (Slurm job N) at URL``: the board's "URL learned". A wildcard address (``--host 0.0.0.0``) is reported
  as the job's node name. A job that ends before it serves fails the lease with its state and last lines.
* then it watches the job and exits 1 when it ends (the board's "exited after it started");
* on SIGTERM (a release, an idle lease expired, the control plane's exit, or its death: the board starts every
  child with a parent-death SIGTERM) it ``scancel``s the job (``SlurmSystem.cancel``: until it left the queue).

No job outlives its control plane: when both it and this keeper are killed outright, the sandbox's own
``--exit-when-idle`` ends the job once no client uses it, and ``--lease-time-limit`` (the job's ``--time``) last.

The bearer token reaches the job through a file only its owner reads (``token`` in the job dir), never through
the script or sbatch's environment (``job_environ`` hides it).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from pathlib import Path

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import load_system
from cloudai.errors import CloudAIError, Stopped, raise_stopped
from cloudai.systems.base import Job, JobSpec
from cloudai.systems.hidden_env import hide_env_var
from cloudai.systems.slurm.render import STDERR, STDOUT
from cloudai.systems.slurm.system import SlurmSystem

_BANNER = re.compile(r"^Serving '[^']*' at (?P<scheme>https?://)(?P<host>\S+):(?P<port>\d+)")
_WILDCARD = ("0.0.0.0", "[::]", "::")
# the job's command: cd into the control plane's working directory ($1, as a local sandbox starts in it: dotted
# paths to env classes resolve alike), export the token read from a file ($2 the variable, $3 the file: when $2 is
# set), then exec the server
_IN_JOB = 'cd "$1" && shift && if [ -n "$1" ]; then export "$1=$(cat "$2")"; fi && shift 2 && exec "$@"'


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cloudai.serve.slurm_sandbox", description=__doc__)
    parser.add_argument("--system-config", type=Path, required=True)
    parser.add_argument("--job-dir", type=Path, required=True)
    parser.add_argument("--token-var", required=True, help="the variable holding the bearer token, if set")
    parser.add_argument("--time-limit", type=float, help="the job's time limit in seconds")
    parser.add_argument("serve", nargs=argparse.REMAINDER, help="-- then the sandbox's `cloudai serve` argv")
    ns = parser.parse_args(args)
    serve = ns.serve[1:] if ns.serve[:1] == ["--"] else ns.serve
    signal.signal(signal.SIGTERM, raise_stopped)
    job: Job | None = None
    system: SlurmSystem | None = None
    try:
        config = load_system(ns.system_config)
        if not isinstance(config, SlurmSystemConfig):
            raise CloudAIError(f"{ns.system_config} is not a Slurm system")
        system = SlurmSystem(config)
        job = system.submit(_spec(ns.job_dir, ns.token_var, ns.time_limit, serve))
        print(f"Slurm job {job.job_id} queued (its output: {ns.job_dir / STDOUT})", flush=True)
        url = _await_url(system, job, ns.job_dir / STDOUT)
        print(f"Sandbox (Slurm job {job.job_id}) at {url}", flush=True)
        while not job.done:
            system.wait([job], None)
        print(f"Slurm job {job.job_id} ended: {job.status} {job.reason}".rstrip(), flush=True)
        return 1
    except (KeyboardInterrupt, Stopped):
        if job is not None and not job.done:  # e.g. still pending at --lease-start-timeout: say why
            why = f": {job.reason}" if job.reason else ""
            print(f"stopped; Slurm job {job.job_id} cancelled (it was {job.status}{why})", flush=True)
        return 0
    except CloudAIError as exc:
        print(f"error: {exc}", flush=True)
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if system is not None and job is not None and not job.done:
            system.cancel([job], "sandbox released")


def _spec(job_dir: Path, token_var: str, time_limit_s: float | None, serve: list[str]) -> JobSpec:
    """The job: ``serve`` on one node, one task, unbuffered (its banner reaches ``stdout.txt`` at once)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    token = os.environ.get(token_var)
    hide_env_var(token_var)
    var, path = "", ""
    if token:
        var, path = token_var, str((job_dir / "token").resolve())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token)
    argv = ["/bin/sh", "-c", _IN_JOB, "cloudai-sandbox", str(Path.cwd()), var, path, *serve]
    return JobSpec(name="cloudai-sandbox", argv=tuple(argv), job_dir=job_dir.resolve(),
                   env={"PYTHONUNBUFFERED": "1"}, time_limit_s=time_limit_s, ntasks=1, mpi=False)  # fmt: skip


def _await_url(system: SlurmSystem, job: Job, stdout: Path) -> str:
    """Poll the job's stdout for the server's banner until it serves (its URL) or the job ends (an error). The
    board bounds the wait (``--lease-start-timeout``: then SIGTERM, and the job is cancelled)."""
    while True:
        found = _banner(stdout)
        if found is not None:
            host = found["host"]
            if host in _WILDCARD:
                host = _node(system, job) or host
            return f"{found['scheme']}{host}:{found['port']}"
        if job.done:
            last = " | ".join(_tail(stdout.with_name(STDERR)) or _tail(stdout)) or "no output"
            raise CloudAIError(f"Slurm job {job.job_id} ended ({job.status} {job.reason}) before serving: {last}")
        system.wait([job], system.config.poll_interval_s)


def _banner(stdout: Path) -> re.Match[str] | None:
    try:
        text = stdout.read_text(errors="replace")
    except OSError:
        return None
    return next((m for line in text.splitlines() if (m := _BANNER.match(line))), None)


def _tail(stdout: Path) -> list[str]:
    try:
        return stdout.read_text(errors="replace").splitlines()[-3:]
    except OSError:
        return []


def _node(system: SlurmSystem, job: Job) -> str | None:
    """The node the job runs on (``squeue %N``), for a sandbox bound to a wildcard address."""
    result = system.commands.run(["squeue", "-h", "-j", job.job_id, "-o", "%N"])
    name = result.stdout.strip() if result.ok else ""
    return name or None


if __name__ == "__main__":
    sys.exit(main())
