"""Progress of a plain run: what is queued, running and done, between the header and the final table.

On a terminal a rich display shows one line of counts (``2 queued, 1 running, 3 done``) and one line
per job: its state (``queued``, ``pending: Resources`` with Slurm's reason from squeue, ``running``,
``ok``, ``failed: exit code 3: ...``) and its elapsed time since it started. In a pipe or a log
file it prints one line per job ended instead (``[jobs 3/6] Tests.1.0 ok (2.1 s)``), which grep
and CI logs handle better than redrawn lines. ``PlainRunner`` feeds it ``started``/``finished``
and, after each wait, ``refresh`` with every job it holds.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from cloudai.systems.base import Job, JobStatus

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

TTY_POLL_S = 1.0  # on a terminal the runner wakes this often, so a pending job shows when it starts


def job_state(job: Job) -> str:
    """One word (and the reason when there is one): what a job is doing or how it ended."""
    if job.status is JobStatus.PENDING:
        return f"pending: {job.reason}" if job.reason else "queued"
    if job.status is JobStatus.RUNNING:
        return "running"
    return f"{job.status}: {job.reason}" if job.reason and job.status is not JobStatus.OK else str(job.status)


def _elapsed(job: Job) -> float | None:
    if job.started_at is None:
        return None
    return (job.ended_at or time.time()) - job.started_at


class PlainProgress:
    """A context manager over ``total`` jobs; ``tty=None`` asks ``sys.stdout.isatty()``."""

    def __init__(self, total: int, echo: Callable[[str], None], *, tty: bool | None = None, console: Any = None):
        self.total, self.echo = total, echo
        self.tty = sys.stdout.isatty() if tty is None else tty
        self.poll_s: float | None = TTY_POLL_S if self.tty else None
        self._console = console
        self._jobs: dict[str, Job] = {}
        self._ended: set[str] = set()
        self._bar: Progress | None = None
        self._summary: TaskID | None = None
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> PlainProgress:
        if self.tty:
            from rich.progress import Progress, TextColumn

            self._bar = Progress(TextColumn("{task.description}"), TextColumn("{task.fields[state]}"),
                                 console=self._console)  # fmt: skip
            self._bar.start()
            self._summary = self._bar.add_task("jobs", total=self.total, state=self.counts())
        return self

    def started(self, job: Job) -> None:
        self._jobs[job.spec.name] = job
        self._show(job)

    def finished(self, job: Job) -> None:
        self._jobs[job.spec.name] = job
        if job.spec.name in self._ended:
            return
        self._ended.add(job.spec.name)
        self._show(job)
        if self._bar is None:
            took = _elapsed(job)
            timing = f" ({took:.1f} s)" if took is not None else ""
            self.echo(f"[jobs {len(self._ended)}/{self.total}] {job.spec.name} {job_state(job)}{timing}")

    def refresh(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            self._jobs[job.spec.name] = job
            self._show(job)

    def counts(self) -> str:
        """``2 queued, 1 running, 3 done`` (jobs not submitted yet count as queued)."""
        running = sum(1 for j in self._jobs.values() if j.status is JobStatus.RUNNING)
        done = len(self._ended)
        return f"{self.total - running - done} queued, {running} running, {done} done"

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def _show(self, job: Job) -> None:
        if self._bar is None or self._summary is None:
            return
        name = job.spec.name
        took = _elapsed(job)
        state = job_state(job) + (f"  {took:.1f} s" if took is not None else "")
        if name not in self._tasks:
            self._tasks[name] = self._bar.add_task(f"  {name}", total=1, state=state)
        self._bar.update(self._tasks[name], state=state, completed=1 if job.done else 0)
        self._bar.update(self._summary, completed=len(self._ended), state=self.counts())
