"""``SlurmSystem`` against the real local Slurm: submit, wait, cancel, time limits, errors.

Waiting is always on Slurm's word (``system.wait`` until the job is final), never a sleep.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.slurm.conftest import squeue_ids

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import SubmissionError, SystemError_
from cloudai.systems.base import Job, JobSpec, JobStatus
from cloudai.systems.slurm.system import SlurmSystem

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("timeout_job")]


def finish(system: SlurmSystem, jobs: list[Job], limit_s: float = 120) -> None:
    """``system.wait`` until every job is final (bounded, so a hang fails instead of blocking CI)."""
    for _ in range(int(limit_s / system.config.poll_interval_s) + 1):
        if all(job.done for job in jobs):
            return
        system.wait(jobs, timeout=limit_s)
    raise AssertionError(f"not final: {[(j.job_id, j.status) for j in jobs]}")


def until_running(system: SlurmSystem, jobs: list[Job]) -> None:
    for _ in range(600):
        if all(job.status is JobStatus.RUNNING for job in jobs):
            return
        system.wait(jobs, timeout=10)
    raise AssertionError(f"not running: {[(j.job_id, j.status) for j in jobs]}")


def test_ok_job_writes_script_and_output(system: SlurmSystem, tmp_path: Path) -> None:
    env = {"GREETING": 'it\'s "quoted" $HOME'}
    job = system.submit(JobSpec("ok", ("bash", "-c", 'echo "$GREETING"; pwd'), tmp_path / "ok", env, 60))
    assert job.job_id.isdigit() and job.submitted_at is not None
    finish(system, [job])
    assert (job.status, job.returncode, job.reason) == (JobStatus.OK, 0, "")
    assert (tmp_path / "ok" / "stdout.txt").read_text() == f'it\'s "quoted" $HOME\n{tmp_path / "ok"}\n'
    assert "#SBATCH --job-name=ok" in (tmp_path / "ok" / "sbatch.sh").read_text()
    assert job.started_at is not None and job.ended_at is not None and job.started_at <= job.ended_at


def test_failing_job_keeps_exit_code(system: SlurmSystem, tmp_path: Path) -> None:
    job = system.submit(JobSpec("bad", ("bash", "-c", "echo oops >&2; exit 3"), tmp_path / "bad"))
    finish(system, [job])
    assert (job.status, job.returncode, job.reason) == (JobStatus.FAILED, 3, "exit code 3")
    assert "oops" in (tmp_path / "bad" / "stderr.txt").read_text()


def test_missing_program_is_a_failed_job(system: SlurmSystem, tmp_path: Path) -> None:
    job = system.submit(JobSpec("nope", ("/no/such/program",), tmp_path / "nope"))
    finish(system, [job])
    assert job.status is JobStatus.FAILED


def test_cancel_running_and_pending(system: SlurmSystem, tmp_path: Path) -> None:
    running = system.submit(JobSpec("run", ("sleep", "300"), tmp_path / "run"))
    until_running(system, [running])
    pending = system.submit(JobSpec("wait", ("true",), tmp_path / "wait"), [f"afterany:{running.job_id}"])
    system.cancel([running, pending], "test stop")
    assert [(j.status, j.reason) for j in (running, pending)] == [(JobStatus.CANCELLED, "test stop")] * 2
    assert running.ended_at is not None
    assert not {running.job_id, pending.job_id} & squeue_ids(tmp_path)


def test_cancel_keeps_the_state_of_a_finished_job(system: SlurmSystem, tmp_path: Path) -> None:
    job = system.submit(JobSpec("quick", ("true",), tmp_path / "quick"))
    finish(system, [job])
    system.cancel([job], "too late")
    assert job.status is JobStatus.OK


def test_native_dependency_orders_jobs(system: SlurmSystem, tmp_path: Path) -> None:
    first = system.submit(JobSpec("first", ("sleep", "2"), tmp_path / "first"))
    second = system.submit(JobSpec("second", ("true",), tmp_path / "second"), [f"afterany:{first.job_id}"])
    finish(system, [first, second])
    assert first.status is JobStatus.OK and second.status is JobStatus.OK
    assert first.ended_at is not None and second.started_at is not None and second.started_at >= first.ended_at


def test_one_squeue_call_per_refresh_for_all_jobs(system: SlurmSystem, tmp_path: Path) -> None:
    jobs = [system.submit(JobSpec(f"j{i}", ("sleep", "300"), tmp_path / f"j{i}")) for i in range(12)]
    before = system.commands.calls["squeue"]
    for _ in range(3):
        system.refresh(jobs)
    assert system.commands.calls["squeue"] - before == 3
    system.cancel(jobs)


def test_wait_returns_at_its_timeout(system: SlurmSystem, tmp_path: Path) -> None:
    job = system.submit(JobSpec("long", ("sleep", "300"), tmp_path / "long"))
    until_running(system, [job])
    system.wait([job], timeout=0.5)
    assert job.status is JobStatus.RUNNING
    system.cancel([job])


@pytest.mark.slow
def test_time_limit_is_a_timeout(system: SlurmSystem, timeout_job: Job) -> None:
    """Slurm's smallest limit is a minute and it checks limits every ~30 s: the job was queued by
    the ``timeout_job`` session fixture at the start of the run, so this waits for the remainder."""
    finish(system, [timeout_job], limit_s=240)
    assert timeout_job.status is JobStatus.TIMEOUT and "time limit" in timeout_job.reason
    assert timeout_job.started_at is not None and timeout_job.ended_at is not None
    assert timeout_job.ended_at - timeout_job.started_at >= 60


def test_submission_error_names_script_and_slurm_message(config: SlurmSystemConfig, tmp_path: Path) -> None:
    bad = config.model_copy(update={"default_partition": "nosuch", "partitions": [*config.partitions]})
    with pytest.raises(SubmissionError) as caught:
        SlurmSystem(bad).submit(JobSpec("x", ("true",), tmp_path / "x"))
    assert str(tmp_path / "x" / "sbatch.sh") in str(caught.value)
    assert "invalid partition" in str(caught.value).lower()


def test_check_without_sbatch(config: SlurmSystemConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemError_, match="sbatch, squeue, scontrol, scancel not found on PATH"):
        SlurmSystem(config).check()


def test_check_with_unreachable_controller(
    config: SlurmSystemConfig, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    conf = Path(os.environ["SLURM_CONF"]).read_text()
    lines = [line for line in conf.splitlines() if not line.startswith("SlurmctldPort=")]
    (tmp_path / "slurm.conf").write_text("\n".join(["SlurmctldPort=1", *lines]) + "\n")
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    with pytest.raises(SystemError_, match="controller is not reachable"):
        SlurmSystem(config).check()


def test_final_state_from_the_real_jobcomp_file(system: SlurmSystem, tmp_path: Path) -> None:
    """The last fallback (after sacct and scontrol, once MinJobAge has passed) reads the cluster's
    jobcomp/filetxt file: check it on the real file the local Slurm writes."""
    job = system.submit(JobSpec("comp", ("bash", "-c", "exit 4"), tmp_path / "comp"))
    finish(system, [job])
    final = system._from_jobcomp([job.job_id])[job.job_id]  # pyright: ignore[reportPrivateUsage]
    assert (final.status, final.returncode) == (JobStatus.FAILED, 4)
