"""Whole-file writes that a reader never sees half done, and that a failure (a full disk) never leaves half done.

No fsync: a report is derived from the run's records and regenerated in a second by ``generate-report``, so
surviving a power loss is not worth a sync on every run's end (the records themselves are synced).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, text: str) -> Path:
    """Write ``text`` to a temp file beside ``path``, then ``os.replace`` it into place; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a report is meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
