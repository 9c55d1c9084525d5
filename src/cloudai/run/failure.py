"""A hard failure of an agent-driven iteration: what the user is told, and ``dse_failure.txt`` beside the records.

The file says what failed, at which step, which steps in flight were cancelled, where the finished ones are, the
exact ``--resume`` command and the traceback; a full disk leaves none rather than an empty one.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.atomicfile import atomic_write
from cloudai.envs.base import BaseGym
from cloudai.run import Echo

if TYPE_CHECKING:
    from cloudai.plan.route import CheckedEntry

FAILURE_FILE = "dse_failure.txt"


def report_failure(
    echo: Echo, checked: CheckedEntry, iteration: int, env: BaseGym, exc: Exception, out_dir: Path, resume_cmd: str
) -> None:
    """Close the env (its in-flight trials cancelled, its finished steps written), then say what failed, where the
    details are and how to go on, on stderr."""
    entry = checked.entry
    in_flight = list(getattr(env, "in_flight", []))
    echo(f"error: {entry.id} iteration {iteration} failed: {type(exc).__name__}: {exc}", err=True)
    try:
        env.close()
        echo(f"  details: {write_failure(out_dir, checked, env, exc, in_flight, resume_cmd)}", err=True)
    except OSError as also:  # e.g. the disk is full: still say how to go on
        echo(f"  (no {FAILURE_FILE} written: {also})", err=True)
    echo(f"  resume with: {resume_cmd}", err=True)


def write_failure(
    out_dir: Path, checked: CheckedEntry, env: BaseGym, exc: BaseException, in_flight: list[int], resume_cmd: str
) -> Path:
    entry = checked.entry
    text = (
        f"cloudai: the agent-driven run of '{entry.id}' (agent {entry.agent.name}) failed hard.\n\n"
        f"what:   {type(exc).__name__}: {exc}\n"
        f"where:  at step {env.last_started} (the last step started); steps in flight were cancelled: {in_flight}\n"
        f"record: every finished step is in {out_dir / 'trajectory.csv'}\n"
        f"resume: {resume_cmd}\n\n"
        "traceback:\n" + "".join(traceback.format_exception(exc))
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    return atomic_write(out_dir / FAILURE_FILE, text)  # a full disk leaves none, never an empty one
