"""The strict records of an agent-driven run: ``trajectory.csv`` and, with env_params, ``env.csv``.

Contract (DESIGN.md "Outputs"):

* ``trajectory.csv``: header ``step,episode,action,reward,observation,status,elapsed_s,reason``;
  ``action`` a JSON object, ``observation`` a JSON list (a missing value is ``null``),
  ``status`` one of ``STATUSES``, ``reason`` one line saying why for every status but ok/cached.
  A file written before ``reason`` existed (``LEGACY_COLUMNS``) still reads (empty reasons) and
  is rewritten with the current header when a run resumes. Steps strictly increase (gaps are allowed: a trial
  cancelled by Ctrl-C is not recorded and a resumed agent may fill it later).
* ``env.csv``: ``step,<param...>``, one row per trajectory row, same step.
* Each row reaches the kernel (one ``write``, flushed) as it is written, the env row first and
  the trajectory row last: the trajectory row commits the step, and a SIGKILL of cloudai loses
  no written row. ``fsync`` (for a power loss or kernel crash, not a killed process) runs at most
  every ``sync_interval_s`` (runs: ``SYNC_INTERVAL_S``) and on ``close``: a power loss may take
  the rows of the last interval, which a resumed run measures again. A crash can thus leave a torn last line
  or an env row without its trajectory row; ``read_trajectory`` drops both, and
  ``TrajectoryWriter(resume=True)`` rewrites both files (atomically) to the consistent
  prefix before appending, so the files stay aligned whatever happened before.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cloudai.atomicfile import atomic_write
from cloudai.errors import ConfigError
from cloudai.readfile import UnsafeFileError, read_regular
from cloudai.recordfiles import COLUMNS, ENV_FILE, LEGACY_COLUMNS, STATUSES, TRAJECTORY_FILE, Row, parse_row
from cloudai.space import env_cell

# trajectory.csv of ~10^6 steps (a row is ~100-300 bytes): a record larger than this is not one cloudai wrote
MAX_RECORD_BYTES = 256 << 20

SYNC_INTERVAL_S = 1.0  # a run's fsync cadence: an fsync per row cost more than a `sleep 0` trial (RELIABILITY.md)


_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)  # once, not per row


def _json(value: Any) -> str:
    return _JSON.encode(value)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _observation(values: Sequence[float]) -> str:
    return _json([v if math.isfinite(v) else None for v in values])


class TrajectoryWriter:
    """Appends rows to ``directory/trajectory.csv`` (and ``env.csv`` when ``env_names`` is non-empty)."""

    def __init__(
        self, directory: Path, env_names: Sequence[str] = (), *, resume: bool = False, sync_interval_s: float = 0.0
    ) -> None:
        """``sync_interval_s`` > 0: rows are still flushed one by one (a killed process loses none), but
        fsync'ed at most that often and on ``close`` (live RL: thousands of steps/s, an fsync per row caps it)."""
        self.directory = directory
        self.sync_interval_s = sync_interval_s
        self._synced = 0.0  # time.monotonic() of the last fsync
        self.env_names = tuple(env_names)
        self.rows: list[Row] = read_trajectory(directory, self.env_names) if resume else []
        self.last_step = self.rows[-1].step if self.rows else 0
        self.broken = False  # a write was interrupted mid-row: append no more (resume repairs the tail)
        directory.mkdir(parents=True, exist_ok=True)
        self._traj = self._open(TRAJECTORY_FILE, COLUMNS, [self._traj_cells(r) for r in self.rows])
        self._env = (
            self._open(ENV_FILE, ("step", *self.env_names), [self._env_cells(r.step, r.env) for r in self.rows])
            if self.env_names
            else None
        )
        self._rows = {id(fh): csv.writer(fh, lineterminator="\n") for fh in (self._traj, self._env) if fh is not None}

    def append(
        self,
        *,
        step: int,
        episode: int,
        action: Mapping[str, Any],
        reward: float,
        observation: Sequence[float],
        status: str,
        elapsed_s: float,
        env: Mapping[str, Any] | None = None,
        reason: str = "",
    ) -> None:
        """Write one step; raises ``ValueError`` on a step not above the last, an unknown status or env mismatch."""
        if step <= self.last_step:
            raise ValueError(f"step {step} is not above the last recorded step {self.last_step}")
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {sorted(STATUSES)}")
        cells = {name: env_cell(value) for name, value in (env or {}).items()}
        if set(cells) != set(self.env_names):
            raise ValueError(f"env params {sorted(cells)} differ from the declared {sorted(self.env_names)}")
        if self.broken:
            raise ValueError("an earlier write was interrupted; no more rows can be appended")
        row = Row(step, episode, dict(action), reward, list(observation), status, elapsed_s, cells, _one_line(reason))
        self.broken = True
        if self._env is not None:
            self._write(self._env, self._env_cells(step, cells))
        self._write(self._traj, self._traj_cells(row))
        if time.monotonic() - self._synced >= self.sync_interval_s:
            self._sync()
        self.broken = False
        self.last_step = step

    def close(self) -> None:
        if self.sync_interval_s > 0:
            self._sync()
        for fh in (self._traj, self._env):
            if fh is not None and not fh.closed:
                fh.close()

    def _open(self, name: str, header: Sequence[str], rows: list[list[str]]) -> io.TextIOWrapper:
        """Rewrite ``name`` atomically with ``header`` + ``rows``, then open it for appending."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        path = atomic_write(self.directory / name, text.getvalue(), fsync=True)
        return open(path, "a", newline="", encoding="utf-8")  # held open for the run

    def _write(self, fh: io.TextIOWrapper, cells: list[str]) -> None:
        self._rows[id(fh)].writerow(cells)
        fh.flush()

    def _sync(self) -> None:
        for fh in (self._env, self._traj):  # env first: the trajectory row commits the step
            if fh is not None and not fh.closed:
                os.fsync(fh.fileno())
        self._synced = time.monotonic()

    @staticmethod
    def _traj_cells(row: Row) -> list[str]:
        reward = repr(float(row.reward))
        return [str(row.step), str(row.episode), _json(row.action), reward, _observation(row.observation),
                row.status, f"{row.elapsed_s:.6f}", row.reason]  # fmt: skip

    def _env_cells(self, step: int, cells: Mapping[str, str]) -> list[str]:
        return [str(step), *(cells[name] for name in self.env_names)]


def read_trajectory(directory: Path, env_names: Sequence[str] = ()) -> list[Row]:
    """The consistent prefix of a run's records, for ``--resume`` and the cache.

    A torn or unparseable *last* row is dropped (an interrupted write); a trajectory step
    without its env.csv row is dropped when it is the last (a crash between the two
    writes). Damage anywhere else, a different header or different env params raise
    ``ConfigError``: silently re-running or skipping steps in the middle would be worse.
    """
    path = directory / TRAJECTORY_FILE
    if not path.exists():
        return []
    rows = _read_rows(path, COLUMNS, LEGACY_COLUMNS)
    env_rows: dict[int, dict[str, str]] = {}
    if env_names:
        for cells in _read_rows(directory / ENV_FILE, ("step", *env_names)):
            if len(cells) == len(env_names) + 1 and cells[0].isdigit():
                env_rows[int(cells[0])] = dict(zip(env_names, cells[1:], strict=True))
    parsed: list[Row] = []
    for index, cells in enumerate(rows):
        last = index == len(rows) - 1
        row = parse_row(cells)
        if row is not None and env_names:
            row = Row(**{**row.__dict__, "env": env_rows[row.step]}) if row.step in env_rows else None
        if row is None or (parsed and row.step <= parsed[-1].step):
            if last:
                break
            raise ConfigError(
                f"line {index + 2} is damaged or out of step order (or has no {ENV_FILE} row)",
                file=path,
                hint="fix or remove that row; cloudai only repairs a torn last row",
            )
        parsed.append(row)
    return parsed


def _read_rows(path: Path, header: Sequence[str], legacy: Sequence[str] | None = None) -> list[list[str]]:
    """The rows after the header, one per line: the writer puts no newline inside a field, so a row torn in the
    middle of the file (an open quote) stays one damaged row instead of swallowing the rows after it."""
    try:
        text = read_regular(path, MAX_RECORD_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise ConfigError("missing", file=path, hint=f"{path.name} is written next to {TRAJECTORY_FILE}") from None
    except UnsafeFileError as exc:  # /dev/zero, a FIFO, a file beyond any run's size
        raise ConfigError(f"refused: {exc}", file=path, hint="this is not a record cloudai wrote") from None
    lines = text.split("\n")
    torn = lines.pop() != ""  # the text after the last newline: a torn last line (or nothing)
    rows = [next(csv.reader([line]), []) for line in lines]
    if not rows or tuple(rows[0]) not in (tuple(header), tuple(legacy or header)):
        raise ConfigError(
            f"header is {rows[0] if rows else '(empty)'}, expected {','.join(header)}",
            file=path,
            hint="was this run started with different agent_metrics or env_params? start a new run",
        )
    if torn:
        rows.append([])  # a torn last line: parseable prefix or not, it was never committed
    return rows[1:]
