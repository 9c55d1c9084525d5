"""One writer per results dir: an exclusive ``flock`` on its ``run.json``, held until the process ends.

Two ``cloudai run --resume DIR`` at once (a double-clicked job script, two terminals, an array job) would
append to the same records, and one would replace the files the other keeps writing. The lock is on
``run.json``, which every results dir has, opened read-only: taking it writes nothing (a refused command must
leave the dir as it was), and the kernel releases it when the process dies, so a SIGKILLed run never blocks a
later ``--resume``. Who holds it is read from ``/proc/locks`` (the lock's pid), to name it in the error.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from cloudai.errors import ConfigError

MANIFEST = "run.json"
_held: dict[Path, int] = {}  # results dir -> the open run.json whose lock this process holds


def lock_results_dir(run_dir: Path) -> None:
    """Take ``run_dir``'s writer lock for the rest of this process; ``ConfigError`` (exit 2) naming the pid that
    holds it. Taking it again in the same process is a no-op."""
    key = run_dir.resolve()
    if key in _held:
        return
    fd = os.open(run_dir / MANIFEST, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        inode = os.fstat(fd).st_ino
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        holder = _holder(inode)
        who = f"another cloudai (pid {holder})" if holder else "another cloudai process"
        raise ConfigError(
            f"is being written by {who}: a results dir has one writer",
            file=run_dir,
            hint="wait for that run to end (or stop it), then resume; a new run gets a dir of its own",
        ) from None
    _held[key] = fd


def release_results_dir(run_dir: Path) -> None:
    """Drop the lock early (tests, long-lived processes that run several scenarios); exit releases it anyway."""
    fd = _held.pop(run_dir.resolve(), None)
    if fd is not None:
        os.close(fd)


def _holder(inode: int) -> int | None:
    """The pid holding a FLOCK on the file with ``inode``, from ``/proc/locks`` (None when not found)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
                return int(fields[4])
    return None
