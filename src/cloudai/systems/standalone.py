"""Run jobs as local subprocesses, each in its own process group (or in this process: ``JobSpec.evaluate``).

Waiting is event-driven: ``wait`` blocks in one ``select`` on the jobs' Linux pidfds (or
polls every 20 ms where pidfds are missing) until a job exits or the nearest time limit
passes. A time limit or a cancel kills the whole process group, and ``systems.contain`` kills
what left the group (``setsid``), so nothing a job started outlives it.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cloudai.atomicfile import write_small
from cloudai.config.system import StandaloneSystemConfig, hf_home
from cloudai.systems.base import Job, JobSpec, JobStatus, System, held_interrupts, redeliver
from cloudai.systems.contain import MARK_VAR, Contained, Containment
from cloudai.systems.hidden_env import hidden, job_environ
from cloudai.systems.spawn import CEnviron, Child, spawn

_CANCEL_GRACE_S = 2.0
_POLL_FALLBACK_S = 0.02
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()  # os.fsencode's


@dataclass
class _Proc:
    popen: Child | subprocess.Popen[bytes]
    deadline: float | None
    pidfd: int | None
    contained: Contained


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _make_dir(path: Path) -> None:
    """``mkdir -p`` in one syscall when the parent exists (every trial but the first)."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.mkdir(parents=True, exist_ok=True)


def _evaluated(spec: JobSpec, now: float) -> Job | None:
    """``spec`` run in this process (``JobSpec.evaluate``), finished as its process would have: ``stdout.txt`` and
    ``stderr.txt``, the exit code, ``exit code N`` as the reason of a failure, ``timeout`` past the time limit; None
    when the evaluation declines (the caller starts the argv). The job's id is this process's: the one that ran it.
    An exception is the evaluation's crash, as a process's would be: a failed job, its traceback in stderr.txt."""
    assert spec.evaluate is not None
    try:
        result = spec.evaluate(spec.time_limit_s)
    except Exception:
        result = 1, "", traceback.format_exc()
    if result is None:
        return None
    code, out, err = result
    write_small(spec.job_dir / "stdout.txt", out.encode())
    write_small(spec.job_dir / "stderr.txt", err.encode())
    ended = time.time()
    job = Job(spec, str(os.getpid()), JobStatus.OK, code, submitted_at=now, started_at=now, ended_at=ended)
    if spec.time_limit_s and ended - now >= spec.time_limit_s:
        job.status, job.reason, job.returncode = JobStatus.TIMEOUT, f"time limit of {spec.time_limit_s:g}s reached", -9
    elif code != 0:
        job.status, job.reason = JobStatus.FAILED, f"exit code {code}"
    return job


def _encoded(env: Mapping[str, str]) -> list[bytes] | None:
    """``env`` as ``NAME=value`` bytes (``Popen``'s encoding, ``os.fsencode``'s, in one pass: a job's own variables
    are encoded per trial); None for a name with ``=`` or a NUL anywhere, which ``Popen`` refuses with its own
    error."""
    items = [f"{name}={value}" for name, value in env.items()]
    if "=" in "".join(env) or "\0" in "".join(items):
        return None
    return [item.encode(_FS_ENCODING, _FS_ERRORS) for item in items]


def _kill_group(pid: int, sig: signal.Signals) -> None:
    try:  # not contextlib.suppress: its three calls, every trial
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        return


class StandaloneSystem(System):
    """This machine. Jobs start at once; ``max_concurrent_jobs`` is the runner's to honour."""

    local_jobs = True

    def __init__(self, config: StandaloneSystemConfig) -> None:
        self.config = config
        self.name = config.name
        self.install_path = config.install_path.absolute()
        self.hf_home_path = hf_home(config)
        self._procs: dict[Job, _Proc] = {}
        self._cancelling: dict[Job, str] = {}  # job -> reason, while its group is being stopped
        self._contain = Containment(cgroups=config.job_containment == "cgroup")  # see systems.contain
        self._interrupt_pending: list[int] = []
        self._null: int | None = None  # /dev/null, opened once: every job's stdin
        # Jobs inherit the environment cloudai had when this system was made (its run's start): reading
        # os.environ decodes every variable, a cost per trial as large as a cgroup move. Less the hidden names
        # and with global_env_vars, built again only when a name is hidden meanwhile (see ``_job_env``).
        self._environ = dict(os.environ)
        self._base_env: tuple[frozenset[str], dict[str, str], CEnviron | None] | None = None

    def submit(self, spec: JobSpec, dependencies: Sequence[str] = ()) -> Job:
        """Start ``spec`` now (``dependencies`` are never given here: ``native_dependencies`` is False).

        The job dir gets its script and the job's own ``stdout.txt``/``stderr.txt`` (the streams go
        straight to the files: complete even if cloudai dies, readable while the job runs). Each file
        is one ``open``/``write``/``close`` (no Python file objects): a ``sleep 0`` trial costs what its
        process costs (benchmarks/bench_trial_cost.py). A spec with an ``evaluate`` that does not decline runs
        in this process instead, and the job comes back finished, with the same files and record.
        """
        self._deliver_pending()  # an interrupt held by the last submission: before anything of this job exists
        _make_dir(spec.job_dir)
        write_small(f"{spec.job_dir}/{self.script_name}", self.render(spec).encode())
        now = time.time()
        if spec.evaluate is not None and (done := _evaluated(spec, now)) is not None:
            return done
        with held_interrupts() as held:  # a started process is registered and contained before Ctrl-C acts
            try:
                job = self._start(spec, now)
            except OSError as exc:  # e.g. the program does not exist: a failed job, not a crash
                reason = f"could not start {spec.argv[0]!r}: {exc.strerror}"
                job = Job(spec, "", JobStatus.FAILED, reason=reason, submitted_at=now, started_at=now, ended_at=now)
            if job in self._procs:
                self._contain.adopt(int(job.job_id), self._procs[job].contained)
        if job in self._procs:  # the caller must hold the job before an interrupt acts, or nobody records it
            self._interrupt_pending = list(held)  # delivered by the next submit() or wait()
        else:
            redeliver(held)
        return job

    def _job_env(self) -> tuple[dict[str, str], CEnviron | None]:
        """What every job of this system inherits: the run's environment less cloudai's tokens, with
        ``global_env_vars`` (the caller copies it), and the same as C's ``NAME=value`` array for ``spawn`` (None
        when a name or value cannot be passed that way: ``Popen`` then says why)."""
        names = hidden()
        if self._base_env is None or self._base_env[0] is not names:
            env = {**job_environ(self._environ), **self.config.global_env_vars}
            encoded = _encoded(env)
            self._base_env = (names, env, None if encoded is None else CEnviron(encoded))
        return self._base_env[1], self._base_env[2]

    def _start(self, spec: JobSpec, now: float) -> Job:
        contained = self._contain.prepare()
        job_dir = str(spec.job_dir)  # joined as text: a Path join per file costs more than its open on tmpfs
        out = os.open(f"{job_dir}/stdout.txt", _NEW_FILE, 0o644)
        try:
            err = os.open(f"{job_dir}/stderr.txt", _NEW_FILE, 0o644)
            try:
                popen = self._spawn(spec, contained.mark, out, err)
            finally:
                os.close(err)
        finally:
            os.close(out)
        job = Job(spec, str(popen.pid), JobStatus.RUNNING, submitted_at=now, started_at=now)
        deadline = now + spec.time_limit_s if spec.time_limit_s else None
        self._procs[job] = _Proc(popen, deadline, _pidfd(popen.pid), contained)
        return job

    def _spawn(self, spec: JobSpec, mark: str, out: int, err: int) -> Child | subprocess.Popen[bytes]:
        """The job's first process, in ``spec.job_dir`` in a new session: through ``spawn`` (half ``Popen``'s cost,
        see ``systems.spawn``), else ``Popen``. Its environment: ``_job_env``, the job's own variables over it, and
        the containment mark (never cloudai's tokens)."""
        argv = ("bash", self.script_name) if spec.steps and not spec.in_batch_shell else spec.argv
        base, converted = self._job_env()
        own = {**spec.env, MARK_VAR: mark} if mark else spec.env
        extra: list[bytes] | None = []
        env: CEnviron | list[bytes] | None
        if converted is not None and own.keys().isdisjoint(base):  # the usual case: the base converted once
            extra = _encoded(own)
            env = None if extra is None else converted
        else:
            env = _encoded({**base, **own})
        if env is not None:
            path = own.get("PATH", base.get("PATH"))
            pid = spawn(argv, spec.job_dir, env, self._devnull(), out, err, path, extra or ())
            if pid is not None:
                return Child(pid)
        return subprocess.Popen(argv, cwd=spec.job_dir, stdin=self._devnull(), stdout=out, stderr=err,
                                env={**base, **own}, start_new_session=True)  # fmt: skip

    def _devnull(self) -> int:
        """One ``/dev/null`` for every job's stdin (``subprocess.DEVNULL`` opens a new one per job)."""
        if self._null is None:
            self._null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        return self._null

    def live_jobs(self) -> list[Job]:
        return list(self._procs)

    def _deliver_pending(self) -> None:
        if self._interrupt_pending:
            pending, self._interrupt_pending = self._interrupt_pending, []
            redeliver(pending)

    def wait(self, jobs: Sequence[Job], timeout: float | None) -> None:
        self._deliver_pending()
        procs = [self._procs[job] for job in jobs if job in self._procs]
        if not procs:
            return
        now = time.time()
        limits = [p.deadline for p in procs if p.deadline is not None]
        if timeout is not None:
            limits.append(now + timeout)
        wait_s = max(0.0, min(limits) - now) if limits else None
        fds = [p.pidfd for p in procs if p.pidfd is not None]
        if len(fds) == len(procs):
            select.select(fds, [], [], wait_s)
        elif all(p.popen.poll() is None for p in procs):
            time.sleep(_POLL_FALLBACK_S if wait_s is None else min(wait_s, _POLL_FALLBACK_S))
        self._refresh([job for job in jobs if job in self._procs])

    def cancel(self, jobs: Sequence[Job], reason: str = "cancelled") -> None:
        self._refresh([job for job in jobs if job in self._procs])  # one that already ended keeps its true status
        live = [job for job in jobs if job in self._procs]
        try:
            for job in live:
                self._cancelling[job] = reason
                _kill_group(self._procs[job].popen.pid, signal.SIGTERM)
            deadline = time.time() + _CANCEL_GRACE_S
            while any(self._procs[job].popen.poll() is None for job in live) and time.time() < deadline:
                self.wait(live, timeout=deadline - time.time())
                live = [job for job in live if job in self._procs]
        except KeyboardInterrupt:  # a second Ctrl-C while stopping: no more grace, SIGKILL now (below)
            live = [job for job in live if job in self._procs]
        for job in live:
            proc = self._procs.pop(job)
            _kill_group(proc.popen.pid, signal.SIGKILL)
            proc.popen.wait()
            self._finish(job, proc, JobStatus.CANCELLED, self._cancelling.pop(job, reason))

    def _refresh(self, jobs: Sequence[Job]) -> None:
        now = time.time()
        for job in jobs:
            proc = self._procs[job]
            code = proc.popen.poll()
            if code is None and proc.deadline is not None and now >= proc.deadline:
                _kill_group(proc.popen.pid, signal.SIGKILL)
                proc.popen.wait()
                del self._procs[job]
                self._finish(job, proc, JobStatus.TIMEOUT, f"time limit of {job.spec.time_limit_s:g}s reached")
            elif code is not None:
                del self._procs[job]
                _kill_group(proc.popen.pid, signal.SIGKILL)  # the job is over: so are its children
                if job in self._cancelling:
                    self._finish(job, proc, JobStatus.CANCELLED, self._cancelling.pop(job))
                else:
                    status = JobStatus.OK if code == 0 else JobStatus.FAILED
                    self._finish(job, proc, status, "" if code == 0 else f"exit code {code}")

    def _finish(self, job: Job, proc: _Proc, status: JobStatus, reason: str) -> None:
        self._contain.end(proc.contained)  # what escaped the process group (setsid) dies now too
        if proc.pidfd is not None:
            os.close(proc.pidfd)
        job.returncode = proc.popen.returncode
        if job.status.final:  # e.g. cancelled after it had already finished: keep the truth
            return
        job.status, job.reason, job.ended_at = status, reason, time.time()
