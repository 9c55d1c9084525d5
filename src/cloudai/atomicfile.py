"""Whole-file writes that a reader never sees half done, and that a failure (a full disk) never leaves half done.

``fsync`` is for records that must survive a power loss (trajectory.csv/env.csv when rewritten
on resume); reports and best.toml are derived from those records and regenerated in a second,
so they skip it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def atomic_write(path: Path, text: str | Iterable[str], *, fsync: bool = False) -> Path:
    """Write ``text`` (or its pieces, as they come: a big file need not be built first) to a temp file beside
    ``path``, then ``os.replace`` it into place; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; results are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.writelines([text] if isinstance(text, str) else text)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_small(path: str | Path, data: bytes) -> None:
    """Create or truncate ``path`` and write ``data`` with one ``open``/``write``/``close``: no Python file object
    (a trial writes two such files: ``path`` may be a ``str``, no ``Path`` joined per file).

    Not atomic: for a file written once by the one process that owns it (a job's ``cmd.sh``, its
    ``job.json``), where a torn file can only come from a crash that also loses the step itself. A write that
    fails (a full disk) removes the file: none is better than an empty one that looks written.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        raise
    finally:
        os.close(fd)
