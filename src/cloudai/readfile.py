"""Read a small input file without trusting what the path points to.

A path the user (or a workload) controls can name a device (``/dev/zero`` reports size 0 and
never ends), a FIFO (``open`` blocks until a writer comes, forever) or a huge file. The file
is opened non-blocking, must be a regular file by ``fstat`` of the open descriptor (not of the
name, which could change in between), and at most ``limit`` bytes are read: one more byte
than the limit means "too large", whatever ``st_size`` claimed.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path


class UnsafeFileError(OSError):
    """The path is not a regular file, or holds more than the limit. ``str()`` says which."""


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` (a regular file of at most ``limit`` bytes); ``UnsafeFileError`` otherwise.

    Other ``OSError`` (missing, unreadable) propagate unchanged for the caller to word.
    """
    fd, _ = _open_regular(path)
    try:
        data = _read_upto(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnsafeFileError(f"larger than {_size(limit)}")
    return data


def open_text(path: Path) -> io.TextIOWrapper:
    """``path`` opened for reading as UTF-8 text (undecodable bytes replaced, newlines kept for ``csv``), when it
    is a regular file; ``UnsafeFileError`` otherwise. For files read a line at a time (memory stays bounded)."""
    fd, _ = _open_regular(path)
    return open(fd, newline="", encoding="utf-8", errors="replace")


def read_ends(path: Path, head: int, tail: int) -> tuple[bytes, bool]:
    """The whole lines within the first ``head`` and the last ``tail`` bytes of the regular file ``path`` (the whole
    file when it is no larger), and whether anything was left out between them; ``UnsafeFileError`` when it is not
    a regular file.

    For a job's output, which the job may make gigabytes long (``NCCL_DEBUG=INFO``) or a device: a tool prints
    its result table last and its header first, so the ends are what a parser needs, in bounded memory."""
    fd, info = _open_regular(path)
    try:
        if info.st_size <= head + tail:
            return _read_upto(fd, head + tail), False
        first = _read_upto(fd, head)
        os.lseek(fd, -tail, os.SEEK_END)
        last = _read_upto(fd, tail)
        # whole lines only: a line cut in two could read as something else (a row of numbers, say)
        return first[: first.rfind(b"\n") + 1] + last[last.find(b"\n") + 1 :], True
    finally:
        os.close(fd)


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """An open descriptor of ``path`` and its ``fstat``, when it is a regular file (checked on the descriptor, not
    the name, which could change in between); opened non-blocking, so a FIFO cannot hang the open."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnsafeFileError(f"not a regular file ({_kind(info.st_mode)})")
    return fd, info


def _read_upto(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from ``fd``'s position, fewer at its end."""
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"
