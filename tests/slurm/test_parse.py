"""Parsers on output captured from the real local Slurm 22.05 (``tests/slurm/captured/``); pure, no Slurm needed.

TIMEOUT is covered here from a captured job (``scontrol_timeout.txt``, ``jobcomp.txt``) and
live by ``test_system.py::test_time_limit_is_a_timeout``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cloudai.systems.base import JobStatus
from cloudai.systems.slurm.parse import (
    final_state,
    jobcomp_location,
    parse_records,
    parse_sacct,
    parse_sbatch,
    parse_scontrol_jobs,
    parse_squeue,
    parse_time,
    returncode_of,
    status_of,
)

CAPTURED = Path(__file__).parent / "captured"


def captured(name: str) -> str:
    return (CAPTURED / name).read_text()


def local(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def test_sbatch_parsable() -> None:
    assert parse_sbatch(captured("sbatch_parsable.txt")) == "7"
    assert parse_sbatch("42;cluster\n") == "42"
    with pytest.raises(ValueError, match="no job id"):
        parse_sbatch("sbatch: error: Batch job submission failed\n")


def test_squeue_pending_running_and_completing() -> None:
    queue = parse_squeue(captured("squeue.txt"))
    assert set(queue) == {"10", "11", "12"}
    assert queue["10"].state == "RUNNING" and queue["10"].started_at == local("2026-11-23T08:02:35")
    assert queue["11"].state == "PENDING" and queue["11"].reason == "Resources" and queue["11"].started_at is None
    assert queue["12"].reason == "Dependency"
    completing = parse_squeue(captured("squeue_completing.txt"))
    assert status_of(completing["10"].state) is JobStatus.RUNNING


def test_squeue_ignores_noise() -> None:
    assert parse_squeue("\n  \ngarbage line\n") == {}


def test_scontrol_each_final_state() -> None:
    cases = {
        "scontrol_completed.txt": ("1", JobStatus.OK, 0),
        "scontrol_failed.txt": ("2", JobStatus.FAILED, 3),
        "scontrol_timeout.txt": ("6", JobStatus.TIMEOUT, -15),
        "scontrol_cancelled.txt": ("3", JobStatus.FAILED, -15),
        "scontrol_cancelled_pending.txt": ("4", JobStatus.FAILED, 0),
    }
    for name, (job_id, status, code) in cases.items():
        state = parse_scontrol_jobs(captured(name))[job_id]
        assert (state.status, state.returncode) == (status, code), name
    failed = parse_scontrol_jobs(captured("scontrol_failed.txt"))["2"]
    assert failed.reason == "exit code 3"
    assert failed.started_at == failed.ended_at == local("2026-11-23T07:59:05")
    timeout = parse_scontrol_jobs(captured("scontrol_timeout.txt"))["6"]
    assert "time limit" in timeout.reason
    cancelled = parse_scontrol_jobs(captured("scontrol_cancelled_pending.txt"))["4"]
    assert cancelled.reason == "ended by Slurm: CANCELLED (Resources)"


def test_multiline_scontrol_equals_one_line() -> None:
    (record,) = parse_records(captured("scontrol_completed.txt"))
    assert record["JobState"] == "COMPLETED" and record["StdOut"] == "/tmp/cap/o1" and record["Power"] == ""


def test_jobcomp_file() -> None:
    states = parse_scontrol_jobs(captured("jobcomp.txt"))
    assert {k: v.status for k, v in states.items()} == {
        "1": JobStatus.OK,
        "2": JobStatus.FAILED,
        "3": JobStatus.FAILED,
        "4": JobStatus.FAILED,
        "5": JobStatus.OK,
        "6": JobStatus.TIMEOUT,
        "7": JobStatus.FAILED,
        "8": JobStatus.FAILED,
        "9": JobStatus.FAILED,
    }
    assert states["6"].ended_at == local("2026-11-23T08:02:17")


def test_sacct_parsable() -> None:
    states = parse_sacct(captured("sacct_jobcomp.txt"))
    assert states["6"].status is JobStatus.TIMEOUT and states["2"].returncode == 3
    assert states["3"].started_at == local("2026-11-23T07:59:05") and states["3"].ended_at == local(
        "2026-11-23T07:59:19"
    )


def test_sacct_skips_steps_and_reads_cancelled_by() -> None:
    text = "12|CANCELLED by 0|0:15|2026-01-01T00:00:00|2026-01-01T00:00:09\n12.batch|CANCELLED|0:15|N/A|N/A\n"
    states = parse_sacct(text)
    assert list(states) == ["12"]
    assert states["12"].status is JobStatus.FAILED and states["12"].reason == "ended by Slurm: CANCELLED by 0"


@pytest.mark.parametrize(
    ("state", "status"),
    [
        ("COMPLETED", JobStatus.OK),
        ("FAILED", JobStatus.FAILED),
        ("OUT_OF_MEMORY", JobStatus.FAILED),
        ("TIMEOUT", JobStatus.TIMEOUT),
        ("CANCELLED", JobStatus.FAILED),
        ("CANCELLED by 1000", JobStatus.FAILED),
        ("NODE_FAIL", JobStatus.FAILED),
        ("PREEMPTED", JobStatus.FAILED),
        ("PENDING", JobStatus.PENDING),
        ("RUNNING", JobStatus.RUNNING),
        ("COMPLETING", JobStatus.RUNNING),
        ("CONFIGURING", JobStatus.RUNNING),
    ],
)
def test_state_mapping(state: str, status: JobStatus) -> None:
    assert status_of(state) is status


def test_reasons_name_what_slurm_did() -> None:
    assert final_state("OUT_OF_MEMORY", "1:0", "N/A", "N/A").reason == "OUT_OF_MEMORY (exit code 1)"
    assert final_state("NODE_FAIL", "0:0", "N/A", "N/A").reason == "ended by Slurm: NODE_FAIL"
    assert final_state("PREEMPTED", "0:0", "N/A", "N/A", "None").reason == "ended by Slurm: PREEMPTED"


@pytest.mark.parametrize(("text", "code"), [("0:0", 0), ("3:0", 3), ("0:15", -15), ("", None), ("x:y", None)])
def test_returncode(text: str, code: int | None) -> None:
    assert returncode_of(text) == code


@pytest.mark.parametrize("text", ["N/A", "Unknown", "None", ""])
def test_time_unknown(text: str) -> None:
    assert parse_time(text) is None


def test_jobcomp_location_from_scontrol_config() -> None:
    assert jobcomp_location(captured("scontrol_config.txt")) == "/tmp/local-slurm/log/jobcomp.txt"
    assert jobcomp_location("JobCompType             = jobcomp/none\nJobCompLoc = /x\n") is None
