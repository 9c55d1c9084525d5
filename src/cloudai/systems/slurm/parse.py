"""Slurm command output as data: pure functions, tested on output captured from a real Slurm.

* ``sbatch --parsable`` -> the job id;
* ``squeue --noheader --format=SQUEUE_FORMAT`` -> ``{job_id: QueueEntry}`` (active jobs only);
* ``sacct --parsable2 --noheader --allocations --format=SACCT_FIELDS`` (also ``sacct -c``)
  -> ``{job_id: FinalState}``;
* ``scontrol show job -o ID`` and the ``jobcomp/filetxt`` file (both ``Key=Value`` records)
  -> ``{job_id: FinalState}``.

Slurm prints times as local wall-clock ``YYYY-MM-DDTHH:MM:SS``; we turn them into
``time.time()``-style epoch seconds, the unit ``Job`` timestamps use.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from cloudai.systems.base import JobStatus

SQUEUE_FORMAT = "%i|%T|%r|%S"
SACCT_FIELDS = "JobID,State,ExitCode,Start,End"

_OK = {"COMPLETED"}
_TIMEOUT = {"TIMEOUT", "DEADLINE"}
_FAILED = {"FAILED", "OUT_OF_MEMORY", "BOOT_FAIL"}
_ENDED_BY_SLURM = {"CANCELLED", "NODE_FAIL", "PREEMPTED", "REVOKED", "SPECIAL_EXIT"}
_PENDING = {"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "RESIZING"}
_RUNNING = {"RUNNING", "COMPLETING", "CONFIGURING", "STAGE_OUT", "SIGNALING", "SUSPENDED", "STOPPED"}


@dataclass(frozen=True)
class QueueEntry:
    """One line of ``squeue``: a job Slurm still tracks as active."""

    state: str
    reason: str
    started_at: float | None


@dataclass(frozen=True)
class FinalState:
    """How a job ended, whatever tool told us."""

    state: str  # Slurm's word, e.g. "TIMEOUT"
    status: JobStatus
    reason: str
    returncode: int | None
    started_at: float | None
    ended_at: float | None


def parse_sbatch(stdout: str) -> str:
    """``"123"`` or ``"123;cluster"`` -> ``"123"``. Raises ``ValueError`` on anything else."""
    line = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    job_id = line.split(";", 1)[0].strip()
    if not job_id.isdigit():
        raise ValueError(f"no job id in sbatch output {stdout.strip()!r}")
    return job_id


def parse_time(text: str) -> float | None:
    """Slurm's local ``2026-11-23T07:59:05`` -> epoch seconds; ``N/A``/``Unknown``/``None`` -> None."""
    try:
        return time.mktime(time.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def status_of(state: str) -> JobStatus:
    """Slurm state (``"CANCELLED by 0"`` allowed) -> our status. Unknown states count as running."""
    word = state.split()[0] if state.strip() else ""
    if word in _OK:
        return JobStatus.OK
    if word in _TIMEOUT:
        return JobStatus.TIMEOUT
    if word in _FAILED or word in _ENDED_BY_SLURM:
        return JobStatus.FAILED
    if word in _PENDING:
        return JobStatus.PENDING
    return JobStatus.RUNNING


def returncode_of(exit_code: str) -> int | None:
    """``"3:0"`` -> 3; ``"0:15"`` (killed by signal 15) -> -15, as ``subprocess`` reports it."""
    code, _, signal = exit_code.partition(":")
    if not code.strip().isdigit():
        return None
    if int(code) == 0 and signal.strip().isdigit() and int(signal) != 0:
        return -int(signal)
    return int(code)


def final_state(state: str, exit_code: str, start: str, end: str, slurm_reason: str = "") -> FinalState:
    """One ended (or still active) job's record, with a reason a user can act on."""
    status = status_of(state)
    returncode = returncode_of(exit_code)
    word = state.split()[0] if state.strip() else "?"
    reason = ""
    if status is JobStatus.FAILED and word in _ENDED_BY_SLURM:
        reason = f"ended by Slurm: {state}" + (f" ({slurm_reason})" if slurm_reason not in ("", "None") else "")
    elif status is JobStatus.FAILED:
        code = f"exit code {returncode}" if returncode is not None else "no exit code"
        reason = code if word == "FAILED" else f"{word} ({code})"
    elif status is JobStatus.TIMEOUT:
        reason = f"Slurm {word}: time limit reached"
    return FinalState(word, status, reason, returncode, parse_time(start), parse_time(end))


def parse_squeue(stdout: str) -> dict[str, QueueEntry]:
    """Lines of ``SQUEUE_FORMAT`` -> entries by job id. Blank and malformed lines are skipped."""
    entries: dict[str, QueueEntry] = {}
    for line in stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4 or not parts[0]:
            continue
        job_id, state, reason, start = parts
        entries[job_id] = QueueEntry(state, reason, parse_time(start) if state != "PENDING" else None)
    return entries


def parse_sacct(stdout: str) -> dict[str, FinalState]:
    """``sacct -P -n -X -o SACCT_FIELDS`` lines -> final states by job id (job steps are ignored)."""
    states: dict[str, FinalState] = {}
    for line in stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5 or "." in parts[0] or not parts[0]:
            continue
        job_id, state, exit_code, start, end = parts
        states[job_id] = final_state(state, exit_code, start, end)
    return states


def parse_records(text: str) -> list[dict[str, str]]:
    """``Key=Value`` records (``scontrol show job``, jobcomp files), one per paragraph or ``-o`` line.

    A word without ``=`` continues the previous value (values such as a ``Reason`` may hold
    spaces); a ``JobId=`` key starts a new record.
    """
    records: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last_key = ""
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep:
            if last_key:
                current[last_key] += " " + word
            continue
        if key == "JobId" and current:
            records.append(current)
            current = {}
        current[key] = value
        last_key = key
    if current:
        records.append(current)
    return records


def parse_scontrol_jobs(text: str) -> dict[str, FinalState]:
    """``scontrol show job`` output or a jobcomp file -> states by job id (later records win)."""
    states: dict[str, FinalState] = {}
    for record in parse_records(text):
        job_id = record.get("JobId", "")
        if not job_id:
            continue
        states[job_id] = final_state(
            record.get("JobState", ""),
            record.get("ExitCode", ""),
            record.get("StartTime", ""),
            record.get("EndTime", ""),
            record.get("Reason", ""),
        )
    return states


def jobcomp_location(scontrol_config: str) -> str | None:
    """The ``JobCompLoc`` file from ``scontrol show config``, when ``JobCompType`` is ``jobcomp/filetxt``."""
    values: dict[str, str] = {}
    for line in scontrol_config.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    if values.get("JobCompType") != "jobcomp/filetxt":
        return None
    return values.get("JobCompLoc") or None
