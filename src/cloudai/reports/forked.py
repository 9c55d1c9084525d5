"""``beside``: part of a big report's page built in a forked child while this process builds the rest.

Why: a 100 000-step run's page is ~0.5 s of one core, in sections that are each a pure function of the records
already read. A forked child has those records for free (copy on write), so on a machine with a second core the
sections it takes cost no wait: only their HTML comes back (pickled, a few KiB).

Contract: ``away`` is a pure function of what is in memory at the fork (it writes no file, prints nothing, changes
nothing the caller reads later) and its result pickles. The page is the same bytes whichever process builds it.
``away`` runs here instead, before ``here``, when forking is not worth it or not safe (``aide.forkable``), and
when the child fails in any way (an exception, killed, a result that does not unpickle): time lost, never a section.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable
from typing import TypeVar

from cloudai.reports import aide

A = TypeVar("A")
B = TypeVar("B")


def beside(away: Callable[[], A], here: Callable[[], B], *, fork: bool) -> tuple[A, B]:
    """``(away(), here())``, ``away`` in a forked child when ``fork``."""
    if not fork or not aide.forkable():
        return away(), here()
    try:
        read_end, write_end = os.pipe()
    except OSError:  # out of descriptors: one process it is
        return away(), here()
    try:
        pid = os.fork()
    except OSError:  # out of processes or memory
        os.close(read_end)
        os.close(write_end)
        return away(), here()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow a fork)
        _child(away, read_end, write_end)
    os.close(write_end)
    reaped = False
    try:
        mine = here()
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
        reaped, status = True, os.waitpid(pid, 0)[1]
    finally:
        if not reaped:  # ``here`` raised (Ctrl-C included): the child's work is not wanted
            with contextlib.suppress(OSError):
                os.close(read_end)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if status == 0:
        with contextlib.suppress(Exception):
            return pickle.loads(data), mine
    return away(), mine


def _child(away: Callable[[], object], read_end: int, write_end: int) -> None:  # pragma: no cover - the child
    """Run ``away``, send its result, exit without running anything of the parent's (atexit, buffered output)."""
    status = 1
    try:
        os.close(read_end)
        aide.leave()  # the parent's aide answers the parent alone
        aide.write_all(write_end, pickle.dumps(away(), protocol=pickle.HIGHEST_PROTOCOL))
        status = 0
    except BaseException:
        pass
    finally:
        os._exit(status)
