"""``env.csv`` read back: each step's environment (``Step.env``), the randomized env params a run drew.

``env_columns`` reads the file into plain columns, a list per param (picklable: a big report's aide reads them
beside ``trajectory.csv``, ``reports.aide``); ``join_env`` sets them on a trajectory's steps by step number;
``read_env`` is the two. Unparseable rows (a torn last line) are skipped with a note.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

from cloudai.readfile import open_text
from cloudai.reports.trajectory import CHUNK_ROWS, Trajectory, Value


@dataclass
class EnvColumns:
    """``env.csv`` as read: its file name, its params (None: no usable header, a note says why), what was noted
    while reading, and each kept row's step with its values, a column per param."""

    name: str
    params: list[str] | None
    notes: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    columns: list[list[Value]] = field(default_factory=list)


def read_env(path: Path, traj: Trajectory) -> None:
    """Join ``env.csv`` onto ``traj`` by step (a step's first row)."""
    join_env(traj, env_columns(path))


def env_columns(path: Path) -> EnvColumns:
    """``path`` read a chunk of rows at a time into columns."""
    notes: list[str] = []
    params = env_params(path, notes)
    if params is None:
        return EnvColumns(path.name, None, notes)
    found = EnvColumns(path.name, params, notes, [], [[] for _ in params])
    for steps, columns in _env_chunks(path, params, notes, CHUNK_ROWS):
        found.steps += steps
        for column, values in zip(found.columns, columns, strict=True):
            column += values
    return found


def join_env(traj: Trajectory, env: EnvColumns) -> None:
    """Set each step's ``env`` from ``env`` (a step's first row; a note for the steps without one) and
    ``traj.env_params``; only the notes when the file had no usable header."""
    traj.notes += env.notes
    if env.params is None:
        return
    envs = _env_dicts(env.params, env.columns, len(env.steps))
    if env.steps == [s.step for s in traj.steps]:  # one row per step, in order: as cloudai writes them
        for s, values in zip(traj.steps, envs, strict=True):
            s.env = values  # in place of the step's own empty one: each row's dict is its own
    else:
        by_step: dict[int, dict[str, Value]] = {}
        for step, values in zip(env.steps, envs, strict=True):
            by_step.setdefault(step, values)
        missing = sum(1 for s in traj.steps if s.step not in by_step)
        if missing:
            traj.notes.append(f"{env.name}: {missing} step(s) have no env row")
        for s in traj.steps:
            s.env.update(by_step.get(s.step, {}))
    traj.env_params = env.params


def env_params(path: Path, notes: list[str]) -> list[str] | None:
    """The params ``env.csv``'s header names; None (and a note) when it does not start with ``step``."""
    try:
        with open_text(path) as fh:
            header = next(csv.reader(fh), None)
    except OSError as exc:
        notes.append(f"{path.name}: not read: {exc}")
        return None
    if not header or header[0] != "step":
        notes.append(f"{path.name}: expected a header starting with 'step'; regimes not shown")
        return None
    return header[1:]


def iter_env(
    path: Path, params: list[str], notes: list[str], chunk: int = CHUNK_ROWS
) -> Iterator[tuple[int, dict[str, Value]]]:
    """``env.csv``'s rows as ``(step, {param: value})`` in file order, ``chunk`` rows read at a time;
    unparseable ones noted."""
    for steps, columns in _env_chunks(path, params, notes, chunk):
        yield from zip(steps, _env_dicts(params, columns, len(steps)), strict=True)


def _env_chunks(
    path: Path, params: list[str], notes: list[str], chunk: int
) -> Iterator[tuple[list[int], list[list[Value]]]]:
    """The kept rows of each ``chunk`` rows of the file: their steps and a column of values per param. Each
    distinct cell of a chunk is converted once (an env param takes few values)."""
    with open_text(path) as fh:  # a regular file: ``env_params`` opened it already
        rows = csv.reader(fh)
        next(rows, None)  # the header (``env_params``)
        lineno = 2
        while block := list(itertools.islice(rows, chunk)):
            kept = block if _env_rows_whole(block, len(params) + 1) else []
            if not kept:
                for i, row in enumerate(block):
                    if len(row) != len(params) + 1 or not row[0].strip().isdigit():
                        notes.append(f"{path.name} line {lineno + i}: unparseable row; dropped")
                    else:
                        kept.append(row)
            lineno += len(block)
            if not kept:
                continue
            first, *cells = zip(*kept, strict=True)
            yield list(map(int, first)), [list(map(_values(column).__getitem__, column)) for column in cells]


def _env_dicts(params: list[str], columns: list[list[Value]], rows: int) -> list[dict[str, Value]]:
    """One ``{param: value}`` per row of ``columns`` (one per param), built a column at a time: a dict per row
    from the first column, then each other column set into them (~2x faster than ``dict(zip(...))`` per row)."""
    if not params:  # a header of ``step`` alone: every row's env is empty
        return [{} for _ in range(rows)]
    first = params[0]
    envs = [{first: value} for value in columns[0]]
    for param, column in zip(params[1:], columns[1:], strict=True):
        for env, value in zip(envs, column, strict=True):
            env[param] = value
    return envs


def _env_rows_whole(block: list[list[str]], width: int) -> bool:
    """Whether every row of ``block`` has ``width`` cells and a step number (checked a column at a time)."""
    return set(map(len, block)) == {width} and all(map(str.isdigit, map(str.strip, map(itemgetter(0), block))))


def _values(cells: Sequence[str]) -> dict[str, Value]:
    """Each distinct cell of ``cells`` and its value (``_value``)."""
    distinct = list(dict.fromkeys(cells))
    if all(map(operator.contains, distinct, itertools.repeat("."))):  # a continuous param: floats (see _value)
        with contextlib.suppress(ValueError):
            return dict(zip(distinct, map(float, distinct), strict=True))
    return {text: _value(text) for text in distinct}


def _value(text: str) -> Value:
    """An env cell as the number or word it is: ``4`` -> 4, ``0.5`` -> 0.5, ``true`` -> True, else the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "":
        return None
    for kind in (float,) if "." in text else (int, float):  # no int has a '.': skip the failing int()
        try:
            return kind(text)
        except ValueError:
            pass
    return text
