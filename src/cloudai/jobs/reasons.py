"""One line that says why a job did not succeed, for job.json, trajectory.csv, progress and reports.

A reason names the mechanism first (``exit code 3``, ``killed by signal 9 (SIGKILL)``, ``no
metrics.json was written``, ``metric 'bw' missing; found: lat, default``) and, when the job
left one, the last non-empty line of its ``stderr.txt`` (else ``stdout.txt``): most tools print
their own error last, and that line is what a user needs to fix the trial.
"""

from __future__ import annotations

import signal
from collections.abc import Collection, Sequence
from pathlib import Path

from cloudai.readfile import read_ends

MAX_REASON = 240  # characters: a reason is one line in a table cell
_TAIL_BYTES = 8192
_LAUNCHER = ("srun: ", "slurmstepd: ")  # the launcher's echo of the exit code or limit: the reason says it already


def returncode_text(code: int | None) -> str:
    """``exit code 3`` / ``killed by signal 9 (SIGKILL)`` (Popen's negative codes); ``""`` for None or 0."""
    if code is None or code == 0:
        return ""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            return f"killed by signal {-code}"
        return f"killed by signal {-code} ({name})"
    return f"exit code {code}"


def last_output_line(job_dir: Path) -> str:
    """The last non-empty line of the job's stderr.txt, else stdout.txt (launcher lines skipped); ``""`` if none."""
    for name in ("stderr.txt", "stdout.txt"):
        try:  # a regular file's last bytes: a job may make its output /dev/zero or a FIFO (refused: no line)
            tail = read_ends(job_dir / name, 0, _TAIL_BYTES)[0].decode("utf-8", errors="replace")
        except OSError:
            continue
        lines = [line.strip() for line in tail.splitlines() if line.strip() and not line.startswith(_LAUNCHER)]
        if lines:
            return lines[-1]
    return ""


def missing_metrics(wanted: Sequence[str], found: Collection[str]) -> str:
    """``metric 'bw' missing; found: a, b`` for the wanted metrics a job did not report; ``""`` if none."""
    missing = [name for name in wanted if name not in found]
    if not missing:
        return ""
    names = ", ".join(f"'{m}'" for m in missing)
    word = "metric" if len(missing) == 1 else "metrics"
    return f"{word} {names} missing; found: {', '.join(sorted(found)) or 'none'}"


def one_line(text: str) -> str:
    """``text`` squeezed onto one line of at most ``MAX_REASON`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 3] + "..."


def failure_reason(reason: str, returncode: int | None, job_dir: Path) -> str:
    """``reason`` (or the return code when it says nothing) followed by the job's last output line."""
    base = reason or returncode_text(returncode) or "failed"
    if returncode is not None and returncode < 0 and "signal" not in base:
        signalled = returncode_text(returncode)
        base = signalled if base == f"exit code {returncode}" else f"{base} ({signalled})"
    line = last_output_line(job_dir)
    return one_line(f"{base}: {line}" if line and line not in base else base)
