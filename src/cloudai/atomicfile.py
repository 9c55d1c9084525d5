"""Whole-file writes that a reader never sees half done, and that a failure (a full disk) never leaves half done.

``fsync`` is for records that must survive a power loss (trajectory.csv/env.csv when rewritten
on resume); reports and best.toml are derived from those records and regenerated in a second,
so they skip it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, text: str, *, fsync: bool = False) -> Path:
    """Write ``text`` to a temp file beside ``path``, then ``os.replace`` it into place; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; results are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
