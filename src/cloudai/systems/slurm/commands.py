"""Running Slurm's command-line tools: every call has a timeout and a uniform result.

Kept apart from ``system.py`` so the system reads as policy (what to ask Slurm, when) and
this module as mechanism (how a call is made, what a failure looks like). ``calls`` counts
calls per tool, for tests and the benchmark (one ``squeue`` per poll interval).

Every tool runs in its own session, so a Ctrl-C at the terminal reaches cloudai only, and
``cloudai.systems.base.held_interrupts`` lets a submission finish before the interrupt is acted on: a job is
never queued without cloudai learning its id.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cloudai.errors import SystemError_
from cloudai.systems.hidden_env import job_environ


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        detail = (self.stderr or self.stdout).strip() or "no output"
        return f"`{' '.join(self.argv)}` exited with {self.returncode}: {detail}"


@dataclass
class SlurmCommands:
    """Runs ``argv`` with a timeout; a missing binary or a timeout is a failed ``Result``, not a crash."""

    timeout_s: float
    calls: Counter[str] = field(default_factory=Counter)

    def run(self, argv: Sequence[str], cwd: Path | None = None, timeout_s: float | None = None) -> Result:
        self.calls[argv[0]] += 1
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            done = subprocess.run(
                list(argv),
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=limit,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=job_environ(),  # sbatch exports this to the job: never cloudai's tokens
            )
        except FileNotFoundError:
            return Result(tuple(argv), 127, "", f"{argv[0]}: command not found")
        except subprocess.TimeoutExpired:
            return Result(tuple(argv), 124, "", f"timed out after {limit:g}s")
        except OSError as exc:
            return Result(tuple(argv), 126, "", f"{argv[0]}: {exc.strerror}")
        return Result(tuple(argv), done.returncode, done.stdout, done.stderr)

    def run_retrying(self, argv: Sequence[str], *, attempts: int = 5, first_pause_s: float = 0.5) -> Result:
        """``run`` until it succeeds, pausing 0.5, 1, 2, 4 s between tries; the last failure is raised.

        For reads (``squeue``) whose failures are usually transient: a busy controller answers
        "Socket timed out" or "Unable to contact slurm controller" and is fine a second later.
        """
        pause = first_pause_s
        result = self.run(argv)
        for _ in range(attempts - 1):
            if result.ok or _not_transient(result):
                break
            time.sleep(pause)
            pause *= 2
            result = self.run(argv)
        if not result.ok and not _not_transient(result):
            raise SystemError_(f"Slurm is not answering after {attempts} tries: {result.describe()}")
        return result


def _not_transient(result: Result) -> bool:
    """Failures retrying cannot fix: the tool is missing, or squeue knows none of the job ids."""
    return result.returncode == 127 or "Invalid job id" in result.stderr
