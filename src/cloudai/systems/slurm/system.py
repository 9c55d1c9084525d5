"""Jobs as Slurm batch jobs: ``sbatch`` to submit, one ``squeue`` per poll for all, ``scancel``.

Tracking costs one ``squeue`` call per ``poll_interval_s`` for every job being waited on,
whatever their number (the controller's load, not ours, is what matters on a shared
cluster). A job that left ``squeue`` has ended; its final state comes from, in order:

1. ``sacct`` when accounting works (found out on the first try, then remembered);
2. ``scontrol show job`` while the controller still holds the job (``MinJobAge``): one call per
   poll for every job that left the queue (``-o ID`` for one, every job the controller holds for more);
3. the ``jobcomp/filetxt`` file the cluster configures (``JobCompLoc``).

A job none of them knows is failed with a reason saying so. A pending job carries squeue's reason
(``Resources``, ``Priority``, ``ReqNodeNotAvail``...) in ``Job.reason`` and the log; with
``pending_timeout`` set, one pending longer is cancelled and failed with that reason. Timestamps come from Slurm's
``Start``/``End`` (whole seconds), ``submitted_at`` from our clock.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import hf_home
from cloudai.errors import ConfigError, SubmissionError, SystemError_
from cloudai.systems.base import Job, JobSpec, JobStatus, NodeNeed, System, held_interrupts, redeliver
from cloudai.systems.slurm.commands import SlurmCommands
from cloudai.systems.slurm.parse import (
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    FinalState,
    QueueEntry,
    jobcomp_location,
    parse_sacct,
    parse_sbatch,
    parse_scontrol_jobs,
    parse_squeue,
    status_of,
)
from cloudai.systems.slurm.preflight import check_mpi, check_nodes, check_placement
from cloudai.systems.slurm.render import SCRIPT_NAME, render_sbatch

log = logging.getLogger(__name__)

REQUIRED_TOOLS = ("sbatch", "squeue", "scontrol", "scancel")
_CANCEL_WAIT_S = 30.0


class SlurmSystem(System):
    """A Slurm cluster reached from this machine. Built as ``SlurmSystem(config)``."""

    native_dependencies = True
    script_name = SCRIPT_NAME

    def __init__(self, config: SlurmSystemConfig) -> None:
        self.config = config
        self.name = config.name
        self.install_path = config.install_path.absolute()
        self.hf_home_path = hf_home(config)
        self.gpus_per_node = config.gpus_per_node
        self.commands = SlurmCommands(config.command_timeout_s)
        self._last_poll = 0.0
        self._accounting: bool | None = None  # None: not tried yet
        self._jobcomp: str | bool | None = False  # False: not looked up yet
        self._queued: list[Job] = []  # every job submitted here, for cancel_all

    # -- contract ---------------------------------------------------------------------------

    def check(self) -> None:
        missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
        if missing:
            raise SystemError_(
                f"Slurm system '{self.name}': {', '.join(missing)} not found on PATH; "
                "run cloudai on a Slurm login node or install the Slurm client tools"
            )
        ping = self.commands.run(["scontrol", "ping"])
        if not ping.ok or "is UP" not in ping.stdout:
            raise SystemError_(
                f"Slurm system '{self.name}': the controller is not reachable ({ping.describe()}); "
                "check SLURM_CONF and that slurmctld is running"
            )
        check_mpi(self.commands, self.config)

    def preflight(self, needs: Sequence[NodeNeed], *, live: bool = True) -> None:
        """Node specs resolve against the system TOML; with ``live``, counts and names against ``sinfo``."""
        problems = check_placement(self.config, needs)
        if not problems and live:
            problems = check_nodes(self.commands, self.config, needs)
        if problems:
            raise ConfigError(problems=problems)

    def render(self, spec: JobSpec, dependencies: Sequence[str] = ()) -> str:
        return render_sbatch(spec, self.config, dependencies)

    def submit(self, spec: JobSpec, dependencies: Sequence[str] = ()) -> Job:
        """Write ``sbatch.sh`` into the job dir and queue it; ``dependencies`` as ``render.dependency_expr``."""
        spec.job_dir.mkdir(parents=True, exist_ok=True)
        script = spec.job_dir.absolute() / SCRIPT_NAME
        script.write_text(self.render(spec, dependencies))
        job = Job(spec, self.sbatch(script), JobStatus.PENDING, submitted_at=time.time())
        self._queued = [*(j for j in self._queued if not j.done), job]
        return job

    def live_jobs(self) -> list[Job]:
        return [job for job in self._queued if not job.done]

    def sbatch(self, script: Path) -> str:
        """Queue ``script``; its job id. Ctrl-C / SIGTERM during ``sbatch`` lets it finish, then
        cancels the job it queued (the caller never saw its id) when the interrupt stops the run."""
        with held_interrupts() as held:
            result = self.commands.run(["sbatch", "--parsable", str(script)], cwd=script.parent)
        try:
            job_id = parse_sbatch(result.stdout) if result.ok else None
        except ValueError as exc:
            raise SubmissionError(f"could not submit {script}: {exc}") from None
        try:
            redeliver(held)
        except BaseException:  # the run stops: the job it just queued must not outlive it
            if job_id is not None:
                self.commands.run(["scancel", job_id])
            raise
        if job_id is None:
            raise SubmissionError(f"could not submit {script}: {result.describe()}")
        return job_id

    def wait(self, jobs: Sequence[Job], timeout: float | None) -> None:
        """Poll until a job's status changes or ``timeout`` passes; never faster than ``poll_interval_s``."""
        live = [job for job in jobs if not job.done]
        if not live:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        before = [job.status for job in live]
        while True:
            next_poll = self._last_poll + self.config.poll_interval_s
            if deadline is not None and next_poll > deadline:  # no poll fits before the deadline
                time.sleep(max(0.0, deadline - time.monotonic()))
                return
            time.sleep(max(0.0, next_poll - time.monotonic()))
            self.refresh(live)
            if [job.status for job in live] != before:
                return

    def cancel(self, jobs: Sequence[Job], reason: str = "cancelled") -> None:
        """One ``scancel`` for all; wait (bounded) until they left the queue; record how each ended.

        A job that had already ended on its own keeps that final state.
        """
        live = [job for job in jobs if not job.done and job.job_id]
        if not live:
            return
        result = self.commands.run(["scancel", *[job.job_id for job in live]])
        deadline = time.monotonic() + _CANCEL_WAIT_S
        remaining = live
        while remaining and time.monotonic() < deadline:
            with contextlib.suppress(SystemError_):
                queued = self._squeue(remaining)
                for job, final in self._finals([j for j in remaining if j.job_id not in queued]).items():
                    self._apply_final(job, final, cancel_reason=reason)
            remaining = [job for job in remaining if not job.done]
            if remaining:
                time.sleep(self.config.poll_interval_s)
        for job in remaining:  # still queued after the grace period, or Slurm stopped answering
            note = "" if result.ok else f" (scancel failed: {result.describe()})"
            job.status, job.reason, job.ended_at = JobStatus.CANCELLED, reason + note, time.time()

    # -- polling ----------------------------------------------------------------------------

    def refresh(self, jobs: Sequence[Job]) -> None:
        """One ``squeue`` for all ``jobs``; final states for those that left it."""
        live = [job for job in jobs if not job.done]
        if not live:
            return
        queued = self._squeue(live)
        for job in live:
            entry = queued.get(job.job_id)
            if entry is None:
                continue
            status = status_of(entry.state)
            if status is JobStatus.RUNNING and job.started_at is None:
                job.started_at = entry.started_at or time.time()
            job.status = status if status in (JobStatus.PENDING, JobStatus.RUNNING) else JobStatus.RUNNING
            reason = entry.reason if status is JobStatus.PENDING and entry.reason != "None" else ""
            if reason and reason != job.reason:
                note = f"{job.spec.name} (Slurm job {job.job_id}) pending: {reason}"
                log.info(note)
                if self.notify is not None:
                    self.notify(note)
            job.reason = reason
        for job, final in self._finals([job for job in live if job.job_id not in queued]).items():
            self._apply_final(job, final)
        self._cancel_overdue([job for job in live if job.status is JobStatus.PENDING])

    def _cancel_overdue(self, pending: Sequence[Job]) -> None:
        """Jobs pending longer than their ``pending_timeout``: cancelled, then failed with squeue's reason."""
        now, overdue, why = time.time(), [], {}
        for job in pending:
            limit = job.spec.pending_timeout_s or self.config.pending_timeout_s
            if limit is not None and job.submitted_at is not None and now - job.submitted_at > limit:
                overdue.append(job)
                why[job] = f"pending for more than {limit:g}s (pending_timeout): {job.reason or 'no reason given'}"
        if not overdue:
            return
        for job in overdue:
            log.warning("job %s (%s) %s; cancelling it", job.job_id, job.spec.name, why[job])
        self.cancel(overdue, "pending_timeout")
        for job in overdue:
            if job.status is JobStatus.CANCELLED:
                job.status, job.reason = JobStatus.FAILED, why[job]

    def _squeue(self, jobs: Sequence[Job]) -> dict[str, QueueEntry]:
        self._last_poll = time.monotonic()
        argv = ["squeue", "--noheader", f"--format={SQUEUE_FORMAT}", f"--jobs={','.join(j.job_id for j in jobs)}"]
        result = self.commands.run_retrying(argv)
        if not result.ok:  # "Invalid job id": Slurm has forgotten every one of them
            return {}
        return parse_squeue(result.stdout)

    def _finals(self, jobs: Sequence[Job]) -> dict[Job, FinalState]:
        """Final states of jobs no longer in ``squeue``; jobs no source knows are failed."""
        if not jobs:
            return {}
        found: dict[str, FinalState] = {}
        ids = [job.job_id for job in jobs]
        if self._accounting is not False:
            found.update(self._from_sacct(ids))
        found.update(self._from_scontrol([job_id for job_id in ids if job_id not in found]))
        missing = [job_id for job_id in ids if job_id not in found]
        if missing:
            found.update({k: v for k, v in self._from_jobcomp(missing).items() if v.status.final})
        unknown = FinalState("UNKNOWN", JobStatus.FAILED, "left the Slurm queue; no final state in sacct, "
                             "scontrol or the jobcomp file", None, None, None)  # fmt: skip
        return {job: found.get(job.job_id, unknown) for job in jobs}

    def _from_sacct(self, ids: Sequence[str]) -> dict[str, FinalState]:
        argv = ["sacct", "--parsable2", "--noheader", "--allocations", f"--format={SACCT_FIELDS}"]
        result = self.commands.run([*argv, f"--jobs={','.join(ids)}"])
        if not result.ok:
            if self._accounting is None:
                self._accounting = False  # e.g. "Slurm accounting storage is disabled"
            return {}
        self._accounting = True
        return {k: v for k, v in parse_sacct(result.stdout).items() if v.status.final}

    def _from_scontrol(self, ids: Sequence[str]) -> dict[str, FinalState]:
        """One ``scontrol show job`` for all ``ids`` (it takes one id, or none for every job it holds)."""
        if not ids:
            return {}
        argv = ["scontrol", "show", "job", "-o", *ids[:1]] if len(ids) == 1 else ["scontrol", "show", "job", "-o"]
        result = self.commands.run(argv)
        wanted = set(ids)
        return {k: v for k, v in parse_scontrol_jobs(result.stdout).items() if k in wanted and v.status.final}

    def _from_jobcomp(self, ids: Sequence[str]) -> dict[str, FinalState]:
        if self._jobcomp is False:
            config = self.commands.run(["scontrol", "show", "config"])
            self._jobcomp = jobcomp_location(config.stdout) if config.ok else None
        if not isinstance(self._jobcomp, str):
            return {}
        try:
            text = Path(self._jobcomp).read_text(errors="replace")
        except OSError:
            return {}
        wanted = set(ids)
        return {k: v for k, v in parse_scontrol_jobs(text).items() if k in wanted}

    @staticmethod
    def _apply_final(job: Job, final: FinalState, cancel_reason: str | None = None) -> None:
        if job.status.final:
            return
        job.returncode = final.returncode
        job.started_at = final.started_at or job.started_at
        job.ended_at = final.ended_at or time.time()
        if cancel_reason is not None and final.state == "CANCELLED":
            job.status, job.reason = JobStatus.CANCELLED, cancel_reason
        else:
            job.status, job.reason = final.status, final.reason
