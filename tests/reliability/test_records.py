"""The records a run leaves are crash-safe: rows flushed one by one (fsync batched), whole files replaced atomically.

``trajectory.csv``/``env.csv`` rows are checked through the real ``TrajectoryWriter`` with
``os.fsync`` observed (what was on disk when each fsync ran); ``best.toml`` and the report
files through their writers on a full disk (a real tmpfs): the previous file survives intact
and no temp file is left behind. The SIGKILL test (test_crash_safety.py) covers the same
records end to end.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cloudai.atomicfile import atomic_write
from cloudai.trajectory.records import SYNC_INTERVAL_S, TrajectoryWriter, read_trajectory


def test_each_row_is_flushed_and_fsynced_env_row_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[tuple[str, int]] = []
    real_fsync = os.fsync

    def observed(fd: int) -> None:
        synced.append((Path(os.readlink(f"/proc/self/fd/{fd}")).name, os.fstat(fd).st_size))
        real_fsync(fd)

    writer = TrajectoryWriter(tmp_path, ["load"])
    monkeypatch.setattr("cloudai.trajectory.records.os.fsync", observed)
    for step in (1, 2, 3):
        synced.clear()
        writer.append(step=step, episode=1, action={"x": step}, reward=1.0, observation=[1.0], status="ok",
                      elapsed_s=0.1, env={"load": 0.5})  # fmt: skip
        sizes = {name: (tmp_path / name).stat().st_size for name in ("env.csv", "trajectory.csv")}
        # the env row first, then the trajectory row that commits the step; each synced whole
        assert synced == [("env.csv", sizes["env.csv"]), ("trajectory.csv", sizes["trajectory.csv"])]
    writer.close()
    assert [r.step for r in read_trajectory(tmp_path, ["load"])] == [1, 2, 3]


def test_a_run_flushes_every_row_and_batches_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's writer (``SYNC_INTERVAL_S``): each row is in the file (a SIGKILL loses none) before any fsync;
    fsync comes at most once per interval and on close, the env file first."""
    synced: list[str] = []
    real_fsync = os.fsync

    def observed(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real_fsync(fd)

    writer = TrajectoryWriter(tmp_path, ["load"], sync_interval_s=SYNC_INTERVAL_S)
    monkeypatch.setattr("cloudai.trajectory.records.os.fsync", observed)
    for step in range(1, 51):
        writer.append(step=step, episode=1, action={"x": step}, reward=1.0, observation=[1.0], status="ok",
                      elapsed_s=0.0, env={"load": 0.5})  # fmt: skip
        assert [r.step for r in read_trajectory(tmp_path, ["load"])][-1] == step  # on disk, fsync'ed or not
    assert len(synced) < 2 * 50  # not one per row (the first row syncs; then once per interval)
    synced.clear()
    writer.close()
    assert synced == ["env.csv", "trajectory.csv"]


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KB tmpfs holding one small file, then filled to the last byte."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        (mount / "old.txt").write_text("the previous version\n")
        with (mount / "filler").open("wb", buffering=0) as fh, pytest.raises(OSError):
            while True:
                fh.write(b"\0" * 4096)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


WRITERS: dict[str, Callable[[Path, str], Path]] = {"best.toml": atomic_write, "report.html": atomic_write}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_whole_file_writes_keep_the_old_file_when_the_disk_is_full(full_disk: Path, name: str) -> None:
    target = full_disk / name
    (full_disk / "old.txt").rename(target)
    with pytest.raises(OSError):
        WRITERS[name](target, "new content\n" * 10_000)
    assert target.read_text() == "the previous version\n"
    assert sorted(p.name for p in full_disk.iterdir()) == sorted(["filler", name])  # no temp file left


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_whole_file_writes_replace_in_one_step(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    target.write_text("old\n")
    inode = target.stat().st_ino
    WRITERS[name](target, "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != inode  # a new file renamed over the old one, never rewritten in place
    assert [p.name for p in tmp_path.iterdir()] == [name]
