"""``Aide``: a second process that does part of a big report's work beside this one.

Why: a 100 000-step report is ~1.3 s of one core. Some of that work needs little from the records this process
holds: reading ``env.csv``'s columns, re-encoding each chunk's action cells to check they are canonical JSON,
Optuna's importance over 500 sampled trials (with its ~0.07 s import). A process forked before anything is read
(a small heap: nothing to copy) does them on a second core, from the file or from the text and the few KiB this
process sends, while this process reads ``trajectory.csv`` and builds the page.

Contract: ``later(fn, *args)`` returns a ``Pending`` whose ``result()`` is ``fn(*args)``, always: computed by the
aide when it is running and answers, else here (no aide: ``started`` found it not worth it or not safe; or it
failed in any way: killed, an exception, an answer that does not unpickle). So ``fn`` must be a pure function of
its arguments and of files that do not change meanwhile (it may run twice, or in either process); it and its
arguments and result must pickle (a module-level function). Requests are answered in order, one at a time.

Started only where it pays and is safe: a big run (``AIDE_BYTES`` of trajectory.csv), more than one CPU of ours,
``os.fork`` (POSIX), and no other thread (a fork copies the calling thread alone: a lock another holds, the logging
module's or an import's, would never be released in the child).
"""

from __future__ import annotations

import contextlib
import importlib
import mmap
import os
import pickle
import signal
import struct
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Generic, TypeVar, cast

T = TypeVar("T")
AIDE_BYTES = 2_000_000  # trajectory.csv of ~20 000 steps: below, the fork costs more than it saves
SHARED_BYTES = 1 << 28  # room for the requests, and as much for the answers: address space, a page used when written
_NOTE = struct.Struct("<?QQ")  # a request or an answer: there is one, its offset in the shared memory, its length
_current: ContextVar[Aide | None] = ContextVar("cloudai_report_aide", default=None)


class Pending(Generic[T]):
    """``fn(*args)``, from the aide when it answers, else computed here when ``result`` is asked (ask once)."""

    def __init__(self, fn: Callable[..., T], args: tuple[object, ...], ticket: int | None, aide: Aide | None) -> None:
        self._fn, self._args, self._ticket, self._aide = fn, args, ticket, aide

    def result(self) -> T:
        if self._aide is not None and self._ticket is not None:
            answer = self._aide.answer(self._ticket)
            self._aide = None
            if answer is not None:
                return cast("T", answer[0])
        return self._fn(*self._args)


def done(value: T) -> Pending[T]:
    """``value`` as a ``Pending`` (for a caller that has the answer without the work)."""
    return Pending(_same, (value,), None, None)


def _same(value: T) -> T:
    return value


def preload(*modules: str) -> None:
    """Have the running aide import ``modules`` now (no answer asked): a later request that needs them waits less."""
    for module in modules:
        later(importlib.import_module, module)


def running() -> bool:
    """Whether an aide takes the ``later`` calls (else they are computed here, at ``result()``)."""
    return _current.get() is not None


def later(fn: Callable[..., T], *args: object) -> Pending[T]:
    """``fn(*args)`` as a ``Pending``: sent to the running aide (``started``), else computed at ``result()``."""
    aide = _current.get()
    ticket = aide.send(fn, args) if aide is not None else None
    return Pending(fn, args, ticket, aide if ticket is not None else None)


@contextlib.contextmanager
def started(worth: bool) -> Iterator[Aide | None]:
    """An aide for the ``later`` calls inside, when ``worth`` it and safe (see the module's docstring)."""
    aide = Aide.fork() if worth and forkable() else None
    token = _current.set(aide)
    try:
        yield aide
    finally:
        _current.reset(token)
        if aide is not None:
            aide.close()


def leave() -> None:
    """In a process forked from one with an aide: none here (its pipes are the parent's)."""
    _current.set(None)


def forkable() -> bool:
    """Whether a fork may pay and is safe here (see the module's docstring)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cpus > 1 and hasattr(os, "fork") and threading.active_count() == 1


class Aide:
    """The parent's end. Requests and answers both go through memory shared with the aide (``SHARED_BYTES`` each
    way, mapped before the fork, a page used only where written), each with a fixed-size note of where it is on a
    pipe: neither side ever waits for the other to read a big one (a pipe alone stalls its writer at 64 KiB until
    the reader comes: the first version of the aide was slower than one process)."""

    def __init__(self, pid: int, requests: int, answers: int, down: mmap.mmap, up: mmap.mmap) -> None:
        self.pid, self._requests, self._answers, self._down, self._up = pid, requests, answers, down, up
        self._sent = self._read = self._used = 0
        self._found: dict[int, tuple[bool, int, int]] = {}  # ticket -> (answered, offset, length)

    @classmethod
    def fork(cls) -> Aide | None:
        try:
            down = mmap.mmap(-1, SHARED_BYTES)
        except OSError:  # no room for it (a strict overcommit policy): one process it is
            return None
        try:
            up = mmap.mmap(-1, SHARED_BYTES)
        except OSError:
            down.close()
            return None
        fds: list[int] = []
        try:
            fds += os.pipe()
            fds += os.pipe()
            pid = os.fork()
        except OSError:  # out of descriptors, processes or memory
            for fd in fds:
                os.close(fd)
            down.close()
            up.close()
            return None
        down_r, down_w, up_r, up_w = fds
        if pid == 0:  # pragma: no cover - the aide (coverage does not follow a fork)
            os.close(down_w)
            os.close(up_r)
            _serve(down_r, up_w, down, up)
        os.close(down_r)
        os.close(up_w)
        return cls(pid, down_w, up_r, down, up)

    def send(self, fn: Callable[..., object], args: tuple[object, ...]) -> int | None:
        """The ticket of a request, or None when it could not be sent (the aide is gone, or it does not fit)."""
        try:
            data = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return None
        offset = self._used
        if offset + len(data) > len(self._down):
            return None
        self._down[offset : offset + len(data)] = data
        try:
            write_all(self._requests, _NOTE.pack(True, offset, len(data)))
        except OSError:
            return None
        self._used += len(data)
        self._sent += 1
        return self._sent

    def answer(self, ticket: int) -> tuple[object] | None:
        """``(value,)`` of request ``ticket``, waiting for it; None when the aide could not answer it."""
        while ticket not in self._found and self._read < self._sent:
            note = _read_exactly(self._answers, _NOTE.size)
            if note is None:  # the aide is gone: no more answers
                self._read = self._sent
                break
            self._read += 1
            self._found[self._read] = _NOTE.unpack(note)
        answered, offset, length = self._found.pop(ticket, (False, 0, 0))
        if not answered:
            return None
        try:
            return (pickle.loads(self._up[offset : offset + length]),)
        except Exception:  # an answer that does not unpickle: computed here instead
            return None

    def close(self) -> None:
        """End the aide and reap it: killed, since nothing it holds is wanted once this process asks no more (a
        request still running, such as ``preload``, would otherwise hold up the exit)."""
        for fd in (self._requests, self._answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self._down.close()
        self._up.close()


def _serve(requests: int, answers: int, down: mmap.mmap, up: mmap.mmap) -> None:  # pragma: no cover - the aide
    """The aide's loop until the requests' pipe closes: each request read from ``down`` where its note says, its
    answer pickled into ``up`` after the last, and a note of where (answered False: it raised, or it did not fit).
    Exits without running anything of the parent's (atexit handlers, buffered output)."""
    status, offset = 1, 0
    try:
        while (note := _read_exactly(requests, _NOTE.size)) is not None:
            _, start, length = _NOTE.unpack(note)
            try:
                fn, args = pickle.loads(down[start : start + length])
                data = pickle.dumps(fn(*args), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # the parent computes it itself
                data = None
            if data is None or offset + len(data) > len(up):
                write_all(answers, _NOTE.pack(False, 0, 0))
                continue
            up[offset : offset + len(data)] = data
            write_all(answers, _NOTE.pack(True, offset, len(data)))
            offset += len(data)
        status = 0
    except BaseException:  # Ctrl-C, a closed pipe: the parent computes what is left
        pass
    finally:
        os._exit(status)


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (a pipe takes it in pieces)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``; None at its end (a torn note too)."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
