"""Start a job's first process with glibc's ``posix_spawn``: what ``subprocess.Popen`` does for a job, at half
its cost in cloudai's process.

A ``sleep 0`` trial's own CPU is mostly its process; ``Popen`` adds ~0.2 ms of Python per start (it encodes the
environment variable by variable, builds every ``PATH`` candidate, then reads an error pipe).
``posix_spawn`` does the same in C: ``vfork``-like (the parent waits only for the ``exec``), the job in a new
session (``POSIX_SPAWN_SETSID``, ``start_new_session``), its stdin/stdout/stderr dup'ed in, its working
directory set (``posix_spawn_file_actions_addchdir_np``, glibc 2.29), every other descriptor closed
(``addclosefrom_np``, glibc 2.34, ``close_fds``), ``SIGPIPE``/``SIGXFSZ`` back to their defaults
(``restore_signals``), every other signal not ignored here to its default (``_Libc.defaults_for``) and no signal
blocked.

The job's ``PATH`` is searched as ``Popen`` searches it: once per program and ``PATH`` (``_found``, a shell's
``hash``), or by glibc in the child (``posix_spawnp``) where a relative entry makes the search the job's own; glibc
reads ``PATH`` from cloudai's own environment, so then ``spawn`` only takes a program without a ``/`` when the job's
``PATH`` is cloudai's, and says ``None`` otherwise, as it does where glibc or these functions are missing: the caller
then uses ``Popen``. A program that cannot be started raises ``OSError`` with the ``errno`` ``exec`` gave
(``Popen``'s).
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

_SETSIGMASK, _SETSIGDEF, _SETSID = 0x08, 0x04, 0x80  # glibc's <spawn.h> flags
_OPAQUE = ctypes.c_uint64 * 128  # posix_spawnattr_t (336 bytes) and posix_spawn_file_actions_t (80), with room
_SIGSET = ctypes.c_uint64 * 16  # sigset_t


class _Libc:
    """glibc's spawn functions, and one attribute object every job shares (posix_spawn only reads it)."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.get_path = libc.getenv
        self.get_path.restype = ctypes.c_char_p
        self.get_path.argtypes = [ctypes.c_char_p]
        self.actions_init = libc.posix_spawn_file_actions_init
        self.actions_destroy = libc.posix_spawn_file_actions_destroy
        self.dup2 = libc.posix_spawn_file_actions_adddup2
        self.dup2.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        self.chdir = libc.posix_spawn_file_actions_addchdir_np
        self.chdir.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.closefrom = libc.posix_spawn_file_actions_addclosefrom_np
        self.closefrom.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.spawn, self.spawnp = libc.posix_spawn, libc.posix_spawnp
        for call in (self.spawn, self.spawnp):
            call.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_void_p]  # fmt: skip
        self.attr = _OPAQUE()
        self.lock = threading.Lock()  # ``attr`` is changed (``defaults_for``) only while no start reads it
        self.set_defaults = libc.posix_spawnattr_setsigdefault
        self.ignored: frozenset[int] | None = None  # the ignored signals ``attr``'s defaults leave out
        mask = _SIGSET()
        libc.sigemptyset(mask)
        ok = (
            libc.posix_spawnattr_init(self.attr) == 0
            and libc.posix_spawnattr_setsigmask(self.attr, mask) == 0
            and libc.posix_spawnattr_setflags(self.attr, ctypes.c_short(_SETSIGMASK | _SETSIGDEF | _SETSID)) == 0
        )
        if not ok:
            raise OSError("posix_spawnattr_* failed")
        self.defaults_for(_ignored())

    def defaults_for(self, ignored: frozenset[int]) -> None:
        """Every signal back to its default in the child but ``ignored``: an ignored signal stays ignored across
        ``exec``, as ``Popen`` leaves it. Python's own two (SIGPIPE, SIGXFSZ) and glibc's (32, 33: below SIGRTMIN)
        are reset all the same, as ``Popen``'s ``restore_signals`` does (glibc's sigaddset refuses its own signals:
        the bits are set directly).

        Naming every other signal is what makes the child cheap: glibc's child sets each signal in this set to its
        default with one ``sigaction``, and asks the disposition of each other one first (two calls): 120 system
        calls a start, 64 this way."""
        defaults = _SIGSET()
        for sig in range(1, _NSIG):
            if sig not in ignored or sig in _RESET:
                defaults[(sig - 1) // 64] |= 1 << ((sig - 1) % 64)
        if self.set_defaults(self.attr, defaults) != 0:
            raise OSError("posix_spawnattr_setsigdefault failed")
        self.ignored = ignored


_NSIG = 65  # Linux's signals are 1-64
_RESET = frozenset((signal.SIGPIPE, signal.SIGXFSZ, *range(32, int(signal.SIGRTMIN))))
_SIGNALS = range(1, _NSIG)
try:  # ``signal.getsignal`` without its conversion to an enum (5x the call): 0, 1 or the handler
    _getsignal: Callable[[int], object] = importlib.import_module("_signal").getsignal
except ImportError:  # another Python
    _getsignal = signal.getsignal


def _ignored() -> frozenset[int]:
    """The signals this process ignores, as Python knows them (a C call each: ~2 us for all 64; a handler set
    from C without Python is not ignored, and the child resets it as glibc would)."""
    get, ignore = _getsignal, int(signal.SIG_IGN)
    return frozenset(sig for sig in _SIGNALS if get(sig) == ignore)


_LIBC: dict[str, _Libc | None] = {}
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()  # os.fsencode's


def _words(argv: Sequence[str]) -> list[bytes]:
    """``argv`` as ``os.fsencode`` encodes it, a ``str`` in one call (not ``fsencode``'s four: once per word per
    trial); anything else (a path) through ``os.fsencode``."""
    return [w.encode(_FS_ENCODING, _FS_ERRORS) if type(w) is str else os.fsencode(w) for w in argv]


def _libc() -> _Libc | None:
    if "libc" not in _LIBC:
        try:
            _LIBC["libc"] = _Libc() if os.uname().sysname == "Linux" else None
        except (OSError, AttributeError):  # not glibc, or a glibc before 2.34
            _LIBC["libc"] = None
    return _LIBC["libc"]


def available() -> bool:
    """Whether ``spawn`` can start processes here (Linux with glibc >= 2.34)."""
    return _libc() is not None


class CEnviron:
    """A system's base job environment as C's ``char *envp[]``, converted once: ``spawn`` writes a job's own
    variables (its knobs, its containment mark) into the slots after it, so a start converts those few, not the
    whole environment (~15 us per job for 41 variables, more in a bigger one). The array is only read while
    ``posix_spawn`` runs (the child has exec'ed when it returns): one start at a time, under ``lock``."""

    def __init__(self, items: Sequence[bytes]) -> None:
        self.items = list(items)
        self.lock = threading.Lock()
        self._room = 0
        self._array = self._grown(8)

    def _grown(self, room: int) -> ctypes.Array[ctypes.c_char_p]:
        self._room = room
        return (ctypes.c_char_p * (len(self.items) + room + 1))(*self.items)

    def with_own(self, own: Sequence[bytes]) -> ctypes.Array[ctypes.c_char_p]:
        """The array holding the base, then ``own``, then NULL (call with ``lock`` held, until the spawn returns)."""
        if len(own) > self._room:
            self._array = self._grown(len(own))
        array, start = self._array, len(self.items)
        for index, item in enumerate(own, start):
            array[index] = item
        array[start + len(own)] = None
        return array


def spawn(argv: Sequence[str], cwd: Path, env: Sequence[bytes] | CEnviron, stdin: int, stdout: int, stderr: int,
          path: str | None, own: Sequence[bytes] = ()) -> int | None:  # fmt: skip
    """Start ``argv`` in ``cwd`` in a new session with ``env`` then ``own`` (``b"NAME=value"`` items, no name
    twice) and the three descriptors as its stdin/stdout/stderr; its pid. ``path``: the job's ``PATH``, searched
    for a program without a ``/`` (``_found``). None where this cannot start it as ``Popen`` would (see the module
    docstring)."""
    libc = _libc()
    words = _words(argv)
    program = words[0] if words else b""
    if libc is None or not program or b"\0" in b"".join(words):  # C would cut a word at a NUL: Popen refuses it
        return None
    args = (ctypes.c_char_p * (len(words) + 1))(*words, None)
    start = functools.partial(_locked, libc, args, env, own, cwd, (stdin, stdout, stderr), argv[0])
    if b"/" in program:
        return start(program, False)
    if path is None:
        return None
    searched = _words((path,))[0]
    found = _found(program, searched)
    if found is not None:
        try:
            return start(found, False)
        except OSError:  # gone, or not a program after all: this once, as if never found (glibc's search says why)
            _FOUND.pop((program, searched), None)
    if searched != libc.get_path(b"PATH"):  # glibc searches this process's PATH, not the job's
        return None
    return start(program, True)


_FOUND: dict[tuple[bytes, bytes], bytes | None] = {}  # (program, PATH) -> where it is: a shell's ``hash``


def _found(program: bytes, path: bytes) -> bytes | None:
    """Where ``execvp`` finds ``program`` on ``path``: the first executable regular file ``PATH/program``, looked
    up once per process (as a shell remembers where each command is: ``hash``), not by every start's child (it
    tried each ``PATH`` entry with an ``execve``: nine failed ones a start here). None where the search depends on
    the job (a relative entry comes first: it is relative to the job's own directory) or finds nothing: glibc then
    searches in the child, as it did. A program removed since is searched for again (``spawn``); like a shell's
    hash, one put earlier on ``PATH`` during the run is not seen."""
    key = (program, path)
    if key not in _FOUND:
        _FOUND[key] = _search(program, path)
    return _FOUND[key]


def _search(program: bytes, path: bytes) -> bytes | None:
    for entry in path.split(b":"):
        if not entry.startswith(b"/"):
            return None
        candidate = os.path.join(entry, program)
        try:
            regular = stat.S_ISREG(os.stat(candidate).st_mode)
        except OSError:  # execvp goes on past a missing or unreadable entry
            continue
        if regular and os.access(candidate, os.X_OK):
            return candidate
    return None


def _locked(
    libc: _Libc,
    args: ctypes.Array[ctypes.c_char_p],
    env: Sequence[bytes] | CEnviron,
    own: Sequence[bytes],
    cwd: Path,
    fds: tuple[int, int, int],
    name: str,
    program: bytes,
    search: bool,
) -> int | None:
    """``_spawn`` with the environment's array, the signals' defaults brought up to date (once Python ignores a
    signal, jobs do too), both held for the call."""
    with libc.lock:
        ignored = _ignored()
        if ignored != libc.ignored:
            libc.defaults_for(ignored)
        if isinstance(env, CEnviron):
            with env.lock:
                return _spawn(libc, program, search, args, env.with_own(own), cwd, fds, name)
        envp = (ctypes.c_char_p * (len(env) + len(own) + 1))(*env, *own, None)
        return _spawn(libc, program, search, args, envp, cwd, fds, name)


def _spawn(
    libc: _Libc,
    program: bytes,
    search: bool,
    args: ctypes.Array[ctypes.c_char_p],
    envp: ctypes.Array[ctypes.c_char_p],
    cwd: Path,
    fds: tuple[int, int, int],
    name: str,
) -> int | None:
    actions = _OPAQUE()
    if libc.actions_init(actions) != 0:
        return None
    pid = ctypes.c_int()
    try:
        codes = [libc.dup2(actions, fd, target) for target, fd in enumerate(fds)]
        codes += (libc.chdir(actions, _words((str(cwd),))[0]), libc.closefrom(actions, 3))
        _check(max(codes))  # 0, or an errno
        code = (libc.spawnp if search else libc.spawn)(ctypes.byref(pid), program, actions, libc.attr, args, envp)
    finally:
        libc.actions_destroy(actions)  # a C call: returns a code, raises nothing
    if code != 0:
        raise OSError(code, os.strerror(code), name)
    return pid.value


class Child:
    """A process ``spawn`` started: the part of ``Popen``'s interface a system uses (``pid``, ``returncode``,
    ``poll``, ``wait``), with its conventions (``-N`` for a death by signal N; 0 for a child reaped elsewhere)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self._reap(0)
        return self.returncode

    def _reap(self, options: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, options)
        except ChildProcessError:
            self.returncode = 0
            return
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)


def _check(code: int) -> None:
    if code != 0:
        raise OSError(code, os.strerror(code))
