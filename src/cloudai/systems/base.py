"""The job abstraction shared by every system (standalone, Slurm, plugins).

Contract, in the order a caller uses it (submitit's Executor/Job, reduced):

1. ``system.check()`` once before anything is submitted: raises ``SystemError_`` when the
   system cannot run jobs at all (missing ``sbatch``, unreachable controller).
2. ``system.render(spec)`` returns the script text that ``submit`` runs; dry-run writes it.
3. ``system.submit(spec) -> Job`` starts (or queues) the job; writes the script to the job dir.
4. ``system.wait(jobs, timeout)`` blocks until at least one of ``jobs`` changed state or
   ``timeout`` seconds passed, and refreshes every given job's state in one go (one
   ``squeue`` for all jobs on Slurm, one ``select`` on Linux pidfds locally).
5. ``system.cancel(jobs)`` stops jobs and marks them ``cancelled`` (or keeps their final state
   when they had already finished).
6. ``system.cancel_all()`` on the way out: the safety net for a job started in the instant a
   signal arrived, which its caller never saw.

Systems know nothing of workloads, agents or the gym env: a job is an argv, a directory,
environment variables and limits.
"""

from __future__ import annotations

import importlib
import signal
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cloudai.steps import Evaluation, Run, Step
from cloudai.systems.shell import export_lines, join, quote  # the one place values become shell text
from cloudai.systems.steps_script import render_steps


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    STOPPED = "stopped"  # ended on purpose by an end_post_comp dependency: not a failure

    @property
    def final(self) -> bool:
        return self not in (JobStatus.PENDING, JobStatus.RUNNING)


@dataclass(frozen=True)
class Container:
    """The image a job asks to run in, and its own mounts (``src:dst``) beyond the system's.

    A system that runs containers (Slurm with pyxis) honours it; one that does not (standalone,
    Slurm with ``container_runtime = "none"``) runs the argv on the host.
    """

    image: str
    mounts: tuple[str, ...] = ()
    # Variables that only make sense inside the image (a path under one of its mounts): exported only where the
    # job runs in its container, and never over a variable the system or the test sets.
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JobSpec:
    """What to run. ``name`` is unique within a run and safe in file names and job names."""

    name: str
    argv: tuple[str, ...]
    job_dir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    time_limit_s: float | None = None
    num_nodes: int = 1
    container: Container | None = None
    ntasks: int | None = None  # processes the command needs when it fixes them (1: not an MPI program)
    ntasks_per_node: int | None = None  # processes per node when the command fixes that (CloudAI's fio)
    mpi: bool = True  # False: not launched through the system's MPI/PMI (no ``srun --mpi``)
    # Placement, as the scenario entry gives it: node names, Slurm host lists ("node-[01-04]") or
    # CloudAI's "PARTITION:GROUP:COUNT" specs; nodes never to use. A system without nodes ignores them.
    nodes: tuple[str, ...] = ()
    exclude_nodes: tuple[str, ...] = ()
    pending_timeout_s: float | None = None  # queued longer than this: cancelled, failed (overrides the system's)
    # A job of several steps (``cloudai.steps``): the script runs these, and ``argv`` is only what the job is
    # about (its benchmark command, for records and messages). Empty: the job is ``argv``.
    steps: tuple[Step, ...] = ()
    # The job run in cloudai's own process instead of ``argv`` (``cloudai.steps.Evaluation``), by a system that runs
    # jobs here (standalone); every other system, and dry-run, runs or renders ``argv``. None: the job is ``argv``.
    evaluate: Evaluation | None = field(default=None, compare=False, repr=False)

    @property
    def in_batch_shell(self) -> bool:
        """The job is its ``argv`` run once by the batch script's own shell (a lone foreground ``batch_shell``
        step of it, CloudAI's BashCmd): systems render it as that one command, without the steps machinery."""
        if len(self.steps) != 1 or not isinstance(run := self.steps[0], Run):
            return False
        return run.batch_shell and not (run.background or run.output or run.env) and run.argv == self.argv


@dataclass(frozen=True)
class NodeNeed:
    """What one scenario entry asks of a cluster, for ``System.preflight``: ``where`` names it in messages."""

    where: str
    num_nodes: int
    nodes: tuple[str, ...] = ()
    exclude_nodes: tuple[str, ...] = ()


@dataclass(eq=False)
class Job:
    """A submitted job. Its system updates ``status`` and the timestamps (``time.time()``)."""

    spec: JobSpec
    job_id: str
    status: JobStatus = JobStatus.PENDING
    returncode: int | None = None
    reason: str = ""
    submitted_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None

    @property
    def done(self) -> bool:
        return self.status.final

    @property
    def started(self) -> bool:
        return self.started_at is not None or self.done

    def record(self) -> dict[str, object]:
        """The job as a JSON-ready dict (written to ``job.json`` in its directory)."""
        return {
            "name": self.spec.name,
            "job_id": self.job_id,
            "status": str(self.status),
            "returncode": self.returncode,
            "reason": self.reason,
            "submitted_at": self.submitted_at,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "argv": list(self.spec.argv),
        }


# Our dependency kinds a queueing system expresses itself (Slurm's ``--dependency`` types).
# ``end_post_comp`` has none: the runner cancels the job when the other one completes.
# ``start_post_comp`` is ``afterany`` (not ``afterok``): the runner starts the dependent job
# whatever the other job's status.
DEPENDENCY_TYPES: dict[str, str] = {"start_post_init": "after", "start_post_comp": "afterany"}


class System(ABC):
    """One place jobs run. Subclasses are built from their pydantic config model."""

    name: str
    #: The system's ``install_path``, absolute (what ``cloudai install`` fills; workloads find their tools there).
    install_path: Path | None = None
    #: The system's Hugging Face cache, absolute (``config.system.hf_home``): serving jobs mount it.
    hf_home_path: Path | None = None
    #: Whether jobs run on this machine (standalone): a workload's ``session`` (a warm worker) can serve them.
    local_jobs: bool = False
    #: GPUs on each node (Slurm's ``gpus_per_node``), for workload constraints; None: the system does not say.
    gpus_per_node: int | None = None
    #: Where progress notes go (a job's pending reason on Slurm); the CLI sets it to its echo.
    notify: Callable[[str], None] | None = None

    def check(self) -> None:
        """Raise ``SystemError_`` if no job can run here. Default: nothing to check."""

    def preflight(self, needs: Sequence[NodeNeed], *, live: bool = True) -> None:
        """Raise ``ConfigError`` (exit 2) when a need cannot be met here, before anything is submitted.

        ``live``: the cluster may be asked (``run``); else only the system's own config (``dry-run``).
        Default: any need fits.
        """

    def render(self, spec: JobSpec) -> str:
        """The script that runs ``spec`` on this machine, for humans and for dry-run (a multi-step job runs it)."""
        lines = ["#!/usr/bin/env bash", f"# cloudai job {spec.name}"]
        lines += export_lines(spec.env)
        lines.append(f"cd {quote(str(spec.job_dir.absolute()))}")
        if spec.steps and not spec.in_batch_shell:
            lines += render_steps(spec.steps, '"$(hostname)"', _local_launch)
        else:
            lines.insert(2, "set -e")
            lines.append(join(spec.argv))
        return "\n".join(lines) + "\n"

    #: The file name of the script ``render`` writes into a job dir, in a real run and in dry-run alike.
    script_name = "cmd.sh"

    #: The system queues a job behind others itself (``submit(spec, dependencies)`` with
    #: ``"after:ID"``/``"afterany:ID"`` expressions); else the runner holds dependent jobs back.
    native_dependencies = False

    @abstractmethod
    def submit(self, spec: JobSpec, dependencies: Sequence[str] = ()) -> Job: ...

    @abstractmethod
    def wait(self, jobs: Sequence[Job], timeout: float | None) -> None: ...

    @abstractmethod
    def cancel(self, jobs: Sequence[Job], reason: str = "cancelled") -> None: ...

    @abstractmethod
    def live_jobs(self) -> list[Job]:
        """Every job this system started that has not ended yet."""

    def cancel_all(self, reason: str = "interrupted") -> None:
        """Cancel every live job this system started, whoever lost track of it."""
        live = self.live_jobs()
        if live:
            self.cancel(live, reason)


def _local_launch(run: Run, command: str) -> str:
    """A step on this machine: the command itself, its output in its own file when it has one."""
    return f"{command} > {quote(run.output)} 2>&1" if run.output else command


# ``signal.signal`` wraps CPython's ``_signal.signal`` to turn numbers into enums, and for a Python handler
# that means raising and catching a ValueError: ten times the call itself. Holding runs twice per trial.
try:
    _set_handler: Callable[[int, Any], Any] = importlib.import_module("_signal").signal
except ImportError:  # another Python
    _set_handler = signal.signal
_HELD = (int(signal.SIGINT), int(signal.SIGTERM))


class held_interrupts:  # lower case: used as a function, ``with held_interrupts() as held``
    """Record SIGINT/SIGTERM inside the block instead of acting on them; the caller ``redeliver``s them after.

    A submission is not atomic: a signal between "the job started" and "the caller holds its
    handle" would leave a job nobody cancels. Outside the main thread signals cannot be
    handled (nor do they arrive): nothing to hold. An ignored signal stays ignored.

    A class, not a ``contextlib.contextmanager``: a trial holds twice, and the generator's machinery cost more
    than the four handler swaps.
    """

    __slots__ = ("held", "previous")

    def __init__(self) -> None:
        self.held: list[int] = []
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> list[int]:
        held = self.held
        if threading.current_thread() is threading.main_thread():
            for sig in _HELD:  # no getsignal: setting a handler returns the one it replaces
                handler = _set_handler(sig, lambda signum, frame: held.append(signum))
                if handler == signal.SIG_IGN:
                    _set_handler(sig, handler)
                else:
                    self.previous[sig] = handler
        return held

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            _set_handler(sig, handler if handler is not None else signal.SIG_DFL)


def redeliver(held: Sequence[int]) -> None:
    """Act on the signals a ``held_interrupts`` block recorded, through the process's own handlers: the
    CLI's counts them (a second Ctrl-C only says the stop is under way), Python's raises
    ``KeyboardInterrupt``. A handler that returns lets the caller go on."""
    for sig in dict.fromkeys(held):
        signal.raise_signal(sig)
