"""The end-of-run report in a detached process: an opt-in (``CLOUDAI_REPORT=background``) for runs whose exit
must not wait for the report. By default ``cloudai run`` writes the report itself before it exits, so every
documented output exists when the command returns (a CI job archiving the dir, a script opening the page, a run
inside an sbatch allocation whose end kills any child).

With the opt-in, ``cloudai run`` calls ``start_report(run_dir)`` and exits at once; the child (``python -m
cloudai.reports.background``) writes ``report.html`` and ``summary.csv`` (optuna loads there, not in
the run) and ends. While it runs, ``report.pid`` in the run dir holds its pid and an
exclusive ``flock`` taken by the parent *before* the child starts and inherited by it: the lock is
released exactly when the child exits, so ``wait_for_report`` (tests, benchmarks, scripts) waits on
the process itself, with no race and no polling. A failure is written to ``report_error.txt``
(the run's outcome is never masked by its report); ``cloudai generate-report`` renders in the
foreground and is the way to re-make it.

"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

PID_FILE = "report.pid"
ERROR_FILE = "report_error.txt"
MODE_VAR = "CLOUDAI_REPORT"


def inline_mode() -> bool:
    """Whether the caller renders the report itself: yes unless ``CLOUDAI_REPORT=background``."""
    return os.environ.get(MODE_VAR, "inline") != "background"


def start_report(run_dir: Path) -> int:
    """Start rendering ``run_dir``'s report in a detached process (its own session); its pid."""
    lock = run_dir / PID_FILE
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until the child exits: the child shares this open file
        (run_dir / ERROR_FILE).unlink(missing_ok=True)
        child = subprocess.Popen(
            [sys.executable, "-m", "cloudai.reports.background", str(run_dir)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(fd,),
            start_new_session=True,  # a Ctrl-C in the terminal after the run must not cut it short
        )
        os.write(fd, f"{child.pid}\n".encode())
    finally:
        os.close(fd)
    return child.pid


def wait_for_report(run_dir: Path) -> float:
    """Block until no report of ``run_dir`` is being rendered in the background; the seconds waited."""
    start = time.perf_counter()
    try:
        fd = os.open(run_dir / PID_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0.0  # none started, or already done
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)
    return time.perf_counter() - start


def _render(run_dir: Path) -> None:
    """The child: write the report; on failure say why in ``report_error.txt``; drop ``report.pid``."""
    try:
        from cloudai.reports.generate import generate_report

        generate_report([run_dir])
    except Exception as exc:  # nobody is there to see a traceback: write it down
        text = f"the report of {run_dir} could not be written: {type(exc).__name__}: {exc}\n\n"
        (run_dir / ERROR_FILE).write_text(text + "".join(traceback.format_exception(exc)))
    finally:
        (run_dir / PID_FILE).unlink(missing_ok=True)  # the lock itself is released when this process exits


if __name__ == "__main__":
    _render(Path(sys.argv[1]))
