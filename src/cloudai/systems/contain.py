"""Containment of standalone jobs: when a job ends, every process it started ends with it.

A job runs in its own session, and killing its process group covers ordinary children. A
descendant that calls ``setsid`` (``setsid sleep 3600 &``, a daemon's double fork) leaves that
group, and once its parent exits it would be re-parented to init and outlive the job, the
trial, Ctrl-C and the run. Two mechanisms close that gap:

1. **cgroup v2, where available and writable**: each job's first process is moved into its own
   cgroup under ours; at the job's end ``cgroup.kill`` kills everything in it, whatever its
   session, and the cgroup is removed.
2. **Always, as the backstop**: the cloudai process is a child subreaper
   (``PR_SET_CHILD_SUBREAPER``), so a job's orphans are re-parented to cloudai, not to init.
   Every job's environment carries ``CLOUDAI_JOB_MARK=<mark>``; at the job's end each child of
   cloudai with that mark (and everything under it) is killed and reaped. This also covers the
   instant between the job's start and its move into the cgroup.

Limits: a process that drops its environment (``env -i``) *and* escapes before the cgroup move
is not recognised; an orphan that exits by itself before a sweep saw it stays a zombie child of
cloudai until cloudai exits (it runs nothing).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

MARK_VAR = "CLOUDAI_JOB_MARK"
_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_ROUNDS = 50
_CGROUP_EMPTY_WAIT_S = 2.0
_counter = itertools.count(1)
_subreaper: dict[str, bool] = {}
_FREE: dict[Path, list[_Cgroup]] = {}  # cgroup root -> its empty job cgroups


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (once). False where Linux says no."""
    if "on" not in _subreaper:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper["on"] = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _subreaper["on"] = False
    return _subreaper["on"]


@dataclass
class _Cgroup:
    """A job cgroup with the two files every job uses kept open: moving a job in is one ``write``, asking
    whether it is empty one ``pread`` (opening them per job cost more than the rest of the move)."""

    path: Path
    procs: int  # cgroup.procs, write-only: a pid written to it moves that process here
    events: int  # cgroup.events: "populated 0" once no process is left

    @classmethod
    def make(cls, path: Path) -> _Cgroup:
        with contextlib.suppress(FileExistsError):  # left by an earlier process with our pid
            os.mkdir(path)
        procs = os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        try:
            return cls(path, procs, os.open(path / "cgroup.events", os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            os.close(procs)
            raise

    def empty(self) -> bool:
        try:
            return b"populated 0" in os.pread(self.events, 4096, 0)
        except OSError:
            return False

    def close(self) -> None:
        os.close(self.procs)
        os.close(self.events)


@dataclass
class Contained:
    """One job's containment: its mark, and its cgroup when it has one."""

    mark: str
    cgroup: _Cgroup | None = None
    pid: int = 0  # the job's first process, once adopted


class Containment:
    """Per-job containment for one ``StandaloneSystem``. ``cgroups=False`` uses the subreaper alone."""

    def __init__(self, *, cgroups: bool = True) -> None:
        self.subreaper = become_subreaper()
        self.cgroup_root = _make_cgroup_root() if cgroups else None
        # Emptied job cgroups, reused (creating one per job costs milliseconds); shared by every system of this
        # process (the root is per process), so the open files are bounded by the jobs running at once.
        self._free = _FREE.setdefault(self.cgroup_root, []) if self.cgroup_root else []

    def prepare(self) -> Contained:
        """A new job's handle, to pass to ``adopt`` and ``end``; its ``mark`` goes into the job's environment as
        ``MARK_VAR`` (an empty mark: none)."""
        return Contained(f"{os.getpid()}.{next(_counter)}")

    def adopt(self, pid: int, handle: Contained) -> None:
        """Move the job's first process into a cgroup of its own (a no-op without cgroups)."""
        handle.pid = pid
        if self.cgroup_root is None:
            return
        try:
            cgroup = self._free.pop() if self._free else _Cgroup.make(self.cgroup_root / f"job-{handle.mark}")
        except OSError:  # no cgroup for this job: the subreaper sweep still covers it
            return
        try:
            os.write(cgroup.procs, str(pid).encode())
        except OSError:  # e.g. the job has already exited: the subreaper sweep still covers it
            self._free.append(cgroup)
            return
        handle.cgroup = cgroup
        _move_early_children(cgroup, pid)

    def end(self, handle: Contained) -> None:
        """Kill and reap whatever is left of the job (call after its process group was killed and its first
        process reaped). Nothing is left, and nothing to look at, when no process was created since that first
        one (``_created_since``): whatever the job started would have a later pid, in its cgroup or among our
        orphans; its cgroup is empty again."""
        alone = handle.pid > 0 and not _created_since(handle.pid)
        if handle.cgroup is not None:
            if alone or _kill_cgroup(handle.cgroup):
                self._free.append(handle.cgroup)
            else:  # still holds a process: never reused (removed at exit if it has emptied by then)
                handle.cgroup.close()
            handle.cgroup = None
        if self.subreaper and not alone:
            sweep(handle.mark)


def _move_early_children(cgroup: _Cgroup, pid: int) -> None:
    """Move into the job's cgroup what its first process forked before it was moved (a job that starts with
    ``env -i setsid sleep &`` forks within a millisecond of its exec, before ``adopt`` runs; such a process carries
    no mark for the sweep either). Forks after the move inherit the cgroup; a second look catches a fork made while
    the first was being moved. Usually there is none, and nothing to read: no process was created since the job's
    first (the kernel's last pid is still its own, ``_created_since``); else one read of the first process's
    ``children`` (~30 us: a lookup in /proc, more than the move itself). Only its main thread's children are looked
    at (a process just past its ``execve`` has no other thread yet; reading every thread's cost a directory listing
    per trial)."""
    if not _created_since(pid):
        return
    moved: set[int] = set()
    for _ in range(3):
        early = [child for child in _main_thread_descendants(pid) if child not in moved]
        if not early:
            return
        for child in early:
            with contextlib.suppress(OSError):  # it may have exited meanwhile
                os.write(cgroup.procs, str(child).encode())
        moved.update(early)


_LOADAVG: dict[str, int | None] = {}  # an open /proc/loadavg, None where it cannot be read


def _created_since(pid: int) -> bool:
    """Whether any process or thread may have been created (in our pid namespace) after ``pid``: the last pid the
    kernel gave out, /proc/loadavg's last field, is not ``pid``. Pids are handed out in increasing order, so a
    process ``pid`` forked was given a later one; True where the file cannot be read (then look)."""
    if "fd" not in _LOADAVG:
        try:
            _LOADAVG["fd"] = os.open("/proc/loadavg", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            _LOADAVG["fd"] = None
    fd = _LOADAVG["fd"]
    if fd is None:
        return True
    try:
        return os.pread(fd, 128, 0).split()[-1] != str(pid).encode()
    except (OSError, IndexError):
        return True


def _main_thread_descendants(pid: int) -> list[int]:
    """The children of ``pid``'s main thread, theirs, and so on: ``/proc/<pid>/task/<pid>/children``, one read each."""
    out, todo = [], [pid]
    while todo and len(out) < 100_000:
        parent = todo.pop()
        try:
            fd = os.open(f"/proc/{parent}/task/{parent}/children", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # it has exited
            continue
        try:
            kids = [int(p) for p in os.read(fd, 1 << 16).split()]
        except (OSError, ValueError):
            kids = []
        finally:
            os.close(fd)
        out += kids
        todo += kids
    return out


def sweep(mark: str) -> int:
    """Kill and reap every orphan of this process marked ``mark``, and everything under it. Returns how many."""
    killed: set[int] = set()
    for _ in range(_SWEEP_ROUNDS):
        found = unsure = False
        for pid in _orphans():
            if pid in killed:
                _reap(pid)
                continue
            marked = _has_mark(pid, mark)
            if marked is None:  # mid-exec: its environment cannot be read for a moment; look again
                unsure = True
            elif marked:
                found = True
                tree = [pid, *_descendants(pid)]
                for member in tree:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(member, signal.SIGKILL)
                killed.update(tree)
                _reap(pid, block=True)  # its children are re-parented to us once it is gone
        if unsure:
            time.sleep(0.001)
        elif not found and not (killed and killed & set(_orphans())):
            break
    return len(killed)


_leader: dict[int, int] = {}  # our pid -> an open /proc/<pid>/task/<pid>/children (re-opened in a forked child)


def _orphans() -> list[int]:
    """The children of our main thread: where Linux re-parents a job's orphans (the subreaper's first
    live thread), whichever thread started the job. One ``pread`` of a file kept open."""
    pid = os.getpid()
    fd = _leader.get(pid)
    if fd is None:
        try:
            fd = _leader[pid] = os.open(f"/proc/{pid}/task/{pid}/children", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return _children()
    try:
        return [int(p) for p in os.pread(fd, 1 << 20, 0).split()]
    except (OSError, ValueError):
        return _children()


def _reap(pid: int, block: bool = False) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0 if block else os.WNOHANG)


def _children(pid: int | str = "self") -> list[int]:
    """Direct children of ``pid`` (every thread's), from ``/proc/<pid>/task/*/children``."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            found += [int(p) for p in _read(f"/proc/{pid}/task/{task}/children").split()]
    return found


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo and len(out) < 100_000:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


def _has_mark(pid: int, mark: str) -> bool | None:
    """Whether ``pid`` carries the job's mark; None while its environment reads empty, which a process in the
    middle of an ``execve`` shows for an instant (a job's escapee exec'ing ``sleep`` was missed that way)."""
    try:
        environ = _read(f"/proc/{pid}/environ")
    except OSError:
        return False
    if not environ:
        return None
    return f"{MARK_VAR}={mark}".encode() in environ.split(b"\0")


def _make_cgroup_root() -> Path | None:
    """``<our cgroup v2>/cloudai-<pid>``, created; None when cgroup v2 is missing or not writable."""
    mount = _cgroup2_mount()
    if mount is None:
        return None
    try:
        line = next(x for x in Path("/proc/self/cgroup").read_text().splitlines() if x.startswith("0::"))
    except (OSError, StopIteration):
        return None
    root = mount / line[3:].lstrip("/") / f"cloudai-{os.getpid()}"
    _remove_stale(root.parent)
    try:
        if not root.exists():
            root.mkdir()
            atexit.register(_remove_cgroups, root)
        if not (root / "cgroup.kill").exists():  # Linux < 5.14: no one-shot kill
            root.rmdir()
            return None
    except OSError:
        return None
    return root


def _cgroup2_mount() -> Path | None:
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split(" - ", 1)
            if len(fields) == 2 and fields[1].split()[0] == "cgroup2":
                return Path(fields[0].split()[4])
    except OSError:
        pass
    return None


def _kill_cgroup(cgroup: _Cgroup) -> bool:
    """``cgroup.kill``, wait (bounded) until it is empty, reap those re-parented to us; whether it is empty."""
    if cgroup.empty():  # the common case: the job's processes all ended with it
        return True
    try:
        members = [int(p) for p in _read(cgroup.path / "cgroup.procs").split()]
    except (OSError, ValueError):
        members = []
    if members:
        with contextlib.suppress(OSError):
            _write(cgroup.path / "cgroup.kill", "1")
    empty = cgroup.empty()
    deadline = time.monotonic() + _CGROUP_EMPTY_WAIT_S
    while not empty and time.monotonic() < deadline:
        time.sleep(0.001)
        empty = cgroup.empty()
    for pid in members:  # orphans of the job are our children now (subreaper): no zombie left behind
        _reap(pid, block=False)
    return empty


def _read(path: str | Path) -> bytes:
    """A small kernel file (cgroupfs, procfs) in one ``open``/``read``/``close`` (Python's file objects add
    four system calls)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(chunks)


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _remove_stale(parent: Path) -> None:
    """The empty cgroups of cloudai processes that died without cleaning up (SIGKILL)."""
    for root in parent.glob("cloudai-*"):
        pid = root.name.removeprefix("cloudai-")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _remove_cgroups(root)


def _remove_cgroups(root: Path) -> None:
    """At exit: this process's job cgroups and their root (those still holding a process stay). A root already gone
    is no error: two cloudai processes that start at once may both clean the same stale one."""
    try:
        children = list(root.glob("job-*"))
    except OSError:  # removed meanwhile
        children = []
    for child in children:
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        root.rmdir()
