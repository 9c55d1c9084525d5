"""The warm worker's lifetime on cloudai's side: started before a run's first trial, stopped after its last.

``runner.py worker`` (see ``runner``'s docstring for the protocol) runs in the aiconfigurator environment as a
child of cloudai, outside every job, so the system's end-of-job cleanup never reaches it. Its first line says
whether it listens (``ready``) or another worker already does (``running``: a test session's, another run's; it
is used, not stopped). Anything else (the environment broke) leaves the trials to estimate cold, each in its own
process: slower, the same numbers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from cloudai.workloads.aiconfigurator.catalog import ENV, RUNNER

LOG = logging.getLogger(__name__)


@contextlib.contextmanager
def warm_worker(install_path: Path) -> Iterator[None]:
    """A warm worker for the trials run inside the block (none when the environment is not installed or
    ``CLOUDAI_AICONFIGURATOR_WORKER=0``)."""
    if os.environ.get("CLOUDAI_AICONFIGURATOR_WORKER", "1") == "0" or not ENV.installed(install_path):
        yield
        return
    proc = start(install_path)
    try:
        yield
    finally:
        if proc is not None:
            stop(proc)


def start(install_path: Path) -> subprocess.Popen[str] | None:
    """Start a worker; the process when this call started one that listens, else None."""
    with open(ENV.path(install_path) / "cloudai-worker.log", "a") as log:
        proc = subprocess.Popen(
            [str(ENV.python(install_path)), str(RUNNER), "worker"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            start_new_session=True,  # a Ctrl-C to cloudai's group is cloudai's to handle; it stops the worker
        )
    assert proc.stdout is not None
    said = proc.stdout.readline().strip()
    if said == "ready":
        return proc
    proc.wait()
    if said != "running":
        LOG.warning("the aiconfigurator worker did not start (%s); trials estimate cold", said or "no answer")
    return None


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
