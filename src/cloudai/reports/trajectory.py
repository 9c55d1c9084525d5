"""``trajectory.csv`` and ``env.csv`` read back as typed ``Step`` records, tolerant of an interrupted run.

A row that does not parse (wrong field count, bad JSON, unknown status, a step not above the previous one)
is dropped and described in ``Trajectory.notes``: the last line of an interrupted run is usually torn (a last
line without its newline is never committed, as in ``cloudai.trajectory.records``), and a report of the completed steps
beats no report. Unlike ``cloudai.trajectory.records.read_trajectory`` (the strict reader ``--resume`` needs), damage
in the middle is a note here, not an error. ``env.csv`` rows are joined by step into ``Step.env``.
Plain Python records rather than a DataFrame: 10 000 steps is small, and the types stay exact.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cloudai.readfile import open_text
from cloudai.recordfiles import COLUMNS, LEGACY_COLUMNS, SCORED, parse_row

Value = bool | int | float | str | None
_canonical = json.JSONEncoder(sort_keys=True).encode  # Step.key: as json.dumps(action, sort_keys=True), made once


@dataclass(frozen=True, slots=True)
class Step:
    step: int
    episode: int
    action: dict[str, object]
    reward: float  # NaN when the row has none
    observation: list[float]  # NaN where nothing was measured
    status: str
    elapsed_s: float
    key: str  # the action as canonical JSON: equal configurations, equal keys
    env: dict[str, Value] = field(default_factory=dict)
    reason: str = ""  # why a failed/timeout/constraint step did not score
    # The reward is a real measurement of the action. Set once: every chart and table filters on it.
    scored: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scored", self.status in SCORED and not math.isnan(self.reward))


@dataclass
class Trajectory:
    steps: list[Step] = field(default_factory=list)
    knobs: list[str] = field(default_factory=list)  # in order of first appearance
    env_params: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def episodes(self) -> int:
        return len({s.episode for s in self.steps})

    def scored(self) -> list[Step]:
        return [s for s in self.steps if s.scored]

    def best(self) -> Step | None:
        """The highest-reward scored step (the earliest on ties), or None when no step scored."""
        return max(self.scored(), key=lambda s: (s.reward, -s.step), default=None)

    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.steps:
            counts[s.status] = counts.get(s.status, 0) + 1
        return counts


def read_trajectory(path: Path) -> Trajectory:
    """Parse ``path``; rows that do not parse are dropped with a note (a torn last line is expected)."""
    traj = Trajectory()
    knobs: dict[str, None] = {}
    for step in iter_steps(path, traj.notes):
        knobs.update(dict.fromkeys(step.action))
        traj.steps.append(step)
    traj.knobs = list(knobs)
    return traj


def iter_steps(path: Path, notes: list[str]) -> Iterator[Step]:
    """The steps ``read_trajectory`` keeps, in file order, one row in memory at a time (a 10^5-step file is
    never held whole); what it drops is described in ``notes``."""
    try:
        fh = open_text(path)
    except OSError as exc:  # not a regular file (a device, a FIFO), unreadable
        notes.append(f"{path.name}: not read: {exc}")
        return
    with fh:
        torn = _ends_without_newline(fh.fileno())
        rows = csv.reader(fh)
        header = next(rows, None)
        if header is None or tuple(header) not in (COLUMNS, LEGACY_COLUMNS):
            found = header if header is not None else "(empty file)"
            notes.append(f"{path.name}: unexpected header {found}; expected {','.join(COLUMNS)}")
            return
        last: int | None = None  # the last kept step
        row = next(rows, None)
        lineno = 2
        while row is not None:
            following = next(rows, None)
            if following is None and torn:
                row = []  # no newline: the writer never committed this row, parseable or not (as trajectory.records)
            step = _parse_row(row)
            if step is None or (last is not None and step.step <= last):
                why = "torn last line (interrupted run)" if following is None else "unparseable or out-of-order row"
                notes.append(f"{path.name} line {lineno}: {why}; dropped")
            else:
                last = step.step
                yield step
            row, lineno = following, lineno + 1


def _ends_without_newline(fd: int) -> bool:
    """Whether the open file's last byte is not a newline: its last row is torn (an empty file is not)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _parse_row(row: list[str]) -> Step | None:
    parsed = parse_row(row)
    if parsed is None:
        return None
    p = parsed
    return Step(p.step, p.episode, p.action, p.reward, p.observation, p.status, p.elapsed_s, _canonical(p.action),
                reason=p.reason)  # fmt: skip


def read_env(path: Path, traj: Trajectory) -> None:
    """Join ``env.csv`` onto ``traj`` by step. Unparseable rows (a torn last line) are skipped with a note."""
    params = env_params(path, traj.notes)
    if params is None:
        return
    by_step: dict[int, dict[str, Value]] = {}
    for step, values in iter_env(path, params, traj.notes):
        by_step.setdefault(step, values)
    missing = sum(1 for s in traj.steps if s.step not in by_step)
    if missing:
        traj.notes.append(f"{path.name}: {missing} step(s) have no env row")
    for s in traj.steps:  # each step's own (empty) env dict, filled in place: no copy of 10^5 steps
        s.env.update(by_step.get(s.step, {}))
    traj.env_params = params


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


ENV_CELL_MEMO = 4096


def iter_env(path: Path, params: list[str], notes: list[str]) -> Iterator[tuple[int, dict[str, Value]]]:
    """``env.csv``'s rows as ``(step, {param: value})`` in file order, one at a time; unparseable ones noted."""
    known: dict[str, Value] = {}  # cell text -> value: an env param takes few values, each converted once

    def value(text: str) -> Value:
        if text in known:
            return known[text]
        converted = _value(text)
        if len(known) < ENV_CELL_MEMO:  # a continuous param's 10^5 distinct cells are not all kept
            known[text] = converted
        return converted

    with open_text(path) as fh:  # a regular file: ``env_params`` opened it already
        rows = csv.reader(fh)
        next(rows, None)  # the header (``env_params``)
        for lineno, row in enumerate(rows, start=2):
            if len(row) != len(params) + 1 or not row[0].strip().isdigit():
                notes.append(f"{path.name} line {lineno}: unparseable row; dropped")
                continue
            yield int(row[0]), dict(zip(params, map(value, row[1:]), strict=True))


def _value(text: str) -> Value:
    """An env cell as the number or word it is: ``4`` -> 4, ``0.5`` -> 0.5, ``true`` -> True, else the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
