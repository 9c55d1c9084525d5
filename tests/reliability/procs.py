"""Process and file helpers for the reliability suite: start the real CLI, wait on state, find strays.

Waiting is on observable state (a file's content, a process's state in ``/proc``), polled
at a short interval with a generous upper bound that only turns a hang into a failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.005


def start_cli(*args: str | os.PathLike[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``cloudai ARGS`` in its own session (its pid is its process group), output captured."""
    return subprocess.Popen(
        [sys.executable, "-m", "cloudai", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def wait_until(
    condition: Callable[[], bool], proc: subprocess.Popen[str] | None, what: str, limit_s: float = 60
) -> None:
    """Return once ``condition()`` holds; fail if ``proc`` exits first or after ``limit_s`` (a hang)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"cloudai exited ({proc.returncode}) before {what}:\n{out}\n{err}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(POLL_S)


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Running (a zombie counts as dead: nobody may be left to reap it here)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    return [pid for pid in _pids() if (f := _stat(pid)) is not None and f[0] != "Z" and int(f[2]) == pgid]


def working_in(root: Path) -> list[int]:
    """Live processes whose working directory is under ``root`` (jobs run in their job dir)."""
    found = []
    resolved = root.resolve()
    for pid in _pids():
        with contextlib.suppress(OSError):
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            if (cwd == resolved or resolved in cwd.parents) and alive(pid):
                found.append(pid)
    return found


def kill_all(pids: list[int]) -> None:
    """SIGKILL ``pids`` and wait (bounded) until they are gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not any(alive(p) for p in pids), None, f"{pids} to die", limit_s=10)


def gone_within(pids: list[int], limit_s: float = 10) -> bool:
    """Whether every pid is dead, allowing ``limit_s`` for asynchronous SIGKILL delivery."""
    deadline = time.monotonic() + limit_s
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True
