"""``trajectory.csv`` read back as typed ``Step`` records, tolerant of an interrupted run.

A row that does not parse (wrong field count, bad JSON, unknown status, a step not above the previous one)
is dropped and described in ``Trajectory.notes``: the last line of an interrupted run is usually torn (a last
line without its newline is never committed, as in ``cloudai.trajectory.records``), and a report of the completed steps
beats no report. Unlike ``cloudai.trajectory.records.read_trajectory`` (the strict reader ``--resume`` needs), damage
in the middle is a note here, not an error. ``env.csv`` rows are joined by step into ``Step.env`` (``env_csv``).
Plain Python records rather than a DataFrame: the types stay exact. They are read a chunk of rows at a time, a
column at once (one C call per column where the row-by-row reader made Python calls per cell) when every row of
the chunk parses; a chunk with a damaged row is read row by row, which says what it drops. Both give
``parse_row``'s steps (tests/reports/test_report_fast_reader.py): 10^5 steps read in a fraction of the time.
"""

from __future__ import annotations

import csv
import itertools
import math
import operator
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.readfile import open_text
from cloudai.recordfiles import COLUMNS, LEGACY_COLUMNS, SCORED, STATUSES, parse_row
from cloudai.reports import aide
from cloudai.reports.trajectory_cells import COMPACT, action_cells, canonical_array, number_cells, observation_cells

if TYPE_CHECKING:
    from cloudai.reports.aide import Pending

Value = bool | int | float | str | None
CHUNK_ROWS = 4096  # rows of trajectory.csv read at once: ~0.5-1 MB of text and its records


def action_key(action: Mapping[str, Any]) -> str:
    """An action as one string: equal configurations, equal keys (``Step.key``; confirm.csv's candidates)."""
    return COMPACT.encode(action)


@dataclass(slots=True)
class Step:
    step: int
    episode: int
    action: dict[str, object]
    reward: float  # NaN when the row has none
    observation: list[float]  # NaN where nothing was measured
    status: str
    elapsed_s: float
    key: str  # ``action_key(action)``: equal configurations, equal keys
    env: dict[str, Value] = field(default_factory=dict)
    reason: str = ""  # why a failed/timeout/constraint step did not score
    # The reward is a real measurement of the action. Set once: every chart and table filters on it.
    scored: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.scored = self.status in SCORED and not math.isnan(self.reward)


@dataclass
class Trajectory:
    steps: list[Step] = field(default_factory=list)
    knobs: list[str] = field(default_factory=list)  # in order of first appearance
    env_params: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # what ``by_status`` and ``scored`` worked out, and from which list of steps, how long (``_fresh``)
    _by_status: tuple[list[Step], int, dict[str, list[Step]]] | None = field(default=None, init=False, repr=False)
    _scored: tuple[list[Step], int, list[Step]] | None = field(default=None, init=False, repr=False)
    _best: tuple[list[Step], int, Step | None] | None = field(default=None, init=False, repr=False)

    @property
    def episodes(self) -> int:
        return len(set(map(attrgetter("episode"), self.steps)))

    def scored(self) -> list[Step]:
        cached = self._scored
        if cached is None or not self._fresh(cached):  # once: every chart and table asks
            cached = self._scored = (self.steps, len(self.steps), list(filter(attrgetter("scored"), self.steps)))
        return list(cached[2])

    def best(self) -> Step | None:
        """The highest-reward scored step (the earliest on ties), or None when no step scored. Worked out once (the
        page, its tables and the summary each ask), again only if ``steps`` changed length."""
        cached = self._best
        if cached is None or not self._fresh(cached):
            scored = self.scored()
            rewards = list(map(attrgetter("reward"), scored))  # in step order: the first highest is the earliest
            best = scored[rewards.index(max(rewards))] if rewards else None
            cached = self._best = (self.steps, len(self.steps), best)
        return cached[2]

    def status_counts(self) -> dict[str, int]:
        return {status: len(steps) for status, steps in self.by_status().items()}

    def by_status(self) -> dict[str, list[Step]]:
        """The steps of each status, in step order; the statuses in order of first appearance. Worked out once
        (the page's charts and tables each ask), again only if ``steps`` changed length."""
        cached = self._by_status
        if cached is None or not self._fresh(cached):
            cached = self._by_status = (self.steps, len(self.steps), by_status(self.steps))
        return cached[2]

    def _fresh(self, cached: tuple[list[Step], int, object]) -> bool:
        """Whether ``cached`` was worked out from ``steps`` as they are (the same list, as long)."""
        return cached[0] is self.steps and cached[1] == len(self.steps)


def by_status(steps: Sequence[Step]) -> dict[str, list[Step]]:
    """The steps of each status, in step order; the statuses in order of first appearance."""
    groups: dict[str, list[Step]] = {}
    for s in steps:
        if s.status in groups:
            groups[s.status].append(s)
        else:
            groups[s.status] = [s]
    return groups


def read_trajectory(path: Path, *, trusted: bool = False) -> Trajectory:
    """Parse ``path``; rows that do not parse are dropped with a note (a torn last line is expected).

    ``trusted`` (with a big report's aide, ``reports.aide``): each chunk's action cells are taken as their own keys
    without re-encoding every action here (~0.1 s of 10^5 steps); the aide re-encodes them meanwhile
    (``canonical_array``), and a file with a chunk that does not re-encode to its own text (never one cloudai
    wrote) is read again the usual way."""
    traj = Trajectory()
    knobs: dict[str, None] = {}
    checks: list[Pending[bool]] | None = [] if trusted else None
    for steps in _chunks(path, traj.notes, CHUNK_ROWS, checks=checks):
        if knobs.keys() >= set(itertools.chain.from_iterable(map(attrgetter("action"), steps))):
            traj.steps += steps  # no knob not seen before (nearly every chunk: one set of its knobs, in C)
            continue
        for step in steps:
            if not knobs.keys() >= step.action.keys():  # a knob not seen before: in order of first appearance
                knobs.update(dict.fromkeys(step.action))
        traj.steps += steps
    traj.knobs = list(knobs)
    if checks and not all(check.result() for check in checks):
        return read_trajectory(path)
    return traj


def iter_steps(path: Path, notes: list[str], chunk: int = CHUNK_ROWS) -> Iterator[Step]:
    """The steps ``read_trajectory`` keeps, in file order, ``chunk`` rows in memory at a time (a 10^5-step file
    is never held whole); what it drops is described in ``notes``.

    A chunk whose rows all parse and follow in step order is read column by column (``_clean_chunk``: a few C
    calls per column instead of Python calls per row); any other chunk row by row (``_row_by_row``), which says
    what it drops. Both give the same steps: ``parse_row``'s, as ``read_steps_row_by_row`` reads them."""
    for steps in _chunks(path, notes, chunk):
        yield from steps


def _chunks(
    path: Path, notes: list[str], chunk: int, *, checks: list[Pending[bool]] | None = None
) -> Iterator[list[Step]]:
    """``iter_steps``'s steps, a list per ``chunk`` rows of the file (``checks``: see ``_clean_chunk``)."""
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
        lineno = 2  # the first row's
        block = list(itertools.islice(rows, chunk))
        while block:
            following = list(itertools.islice(rows, chunk))
            if not following and torn:  # no newline: the writer never committed the last row, parseable or not
                block[-1] = []
            steps = None if chunk <= 1 else _clean_chunk(block, last, checks)
            if steps is None:
                steps = list(_row_by_row(block, lineno, last, not following, path.name, notes))
            if steps:
                last = steps[-1].step
            yield steps
            block, lineno = following, lineno + len(block)


def read_steps_row_by_row(path: Path, notes: list[str]) -> list[Step]:
    """``iter_steps`` one row at a time, ``parse_row`` on each: the reference the column reader must equal."""
    return list(iter_steps(path, notes, chunk=1))


def _row_by_row(
    block: list[list[str]], lineno: int, last: int | None, final: bool, name: str, notes: list[str]
) -> Iterator[Step]:
    """``block``'s steps one row at a time (``final``: the file's last rows), each dropped row noted."""
    for i, row in enumerate(block):
        step = _parse_row(row)
        if step is None or (last is not None and step.step <= last):
            end = final and i == len(block) - 1
            why = "torn last line (interrupted run)" if end else "unparseable or out-of-order row"
            notes.append(f"{name} line {lineno + i}: {why}; dropped")
        else:
            last = step.step
            yield step


def _clean_chunk(
    block: list[list[str]], last: int | None, checks: list[Pending[bool]] | None = None
) -> list[Step] | None:
    """The steps of ``block`` read column by column, when every row parses as ``parse_row`` parses it and the
    steps rise above ``last``; None otherwise (the caller reads it row by row, noting what it drops). ``checks``:
    the action cells are taken as their own keys unchecked (``action_cells``), their check (``canonical_array``,
    by the aide when one runs) appended for the caller to ask."""
    width = len(block[0])
    if width not in (len(COLUMNS), len(LEGACY_COLUMNS)) or set(map(len, block)) != {width}:
        return None
    cols = list(zip(*block, strict=True))
    texts = list(dict.fromkeys(cols[2]))  # each distinct action cell decoded (and its key checked) once
    try:
        steps = list(map(int, cols[0]))
        episodes = list(map(int, cols[1]))  # an empty cell (0 for parse_row) takes the row-by-row path
        distinct, distinct_keys = action_cells(texts, check=None if checks is None else _check_later(checks))
        observations = observation_cells(cols[4])
        rewards, elapsed = number_cells(cols[3]), number_cells(cols[6])
    except (ValueError, TypeError, RecursionError):
        return None
    statuses = _shared(cols[5])
    ordered = all(map(operator.lt, steps, itertools.islice(steps, 1, None))) and (last is None or steps[0] > last)
    if not ordered or not STATUSES.issuperset(statuses) or set(map(type, distinct)) != {dict}:
        return None
    distinct_keys = distinct_keys or _keys(texts, distinct)
    if len(texts) == len(block):
        actions, keys = distinct, distinct_keys
    else:  # a repeated cell's steps share its (never modified) action dict
        actions = list(map(dict(zip(texts, distinct, strict=True)).__getitem__, cols[2]))
        keys = list(map(dict(zip(texts, distinct_keys, strict=True)).__getitem__, cols[2]))
    reasons = _shared(cols[7]) if width == len(COLUMNS) else itertools.repeat("")
    envs = ({} for _ in steps)  # each step its own (empty) env dict: read_env fills it
    found = list(map(Step, steps, episodes, actions, rewards, observations, statuses, elapsed, keys, envs,
                     reasons))  # fmt: skip
    return found if len(found) == len(block) else None  # map stops at its shortest column


def _check_later(checks: list[Pending[bool]]) -> Callable[[str], None]:
    """What ``action_cells`` calls with a chunk's joined cells instead of checking them: the check goes to the aide."""
    return lambda joined: checks.append(aide.later(canonical_array, joined))


def _shared(texts: Sequence[str]) -> list[str]:
    """``texts`` with one str object per distinct text (csv makes one per cell): a status, a failure's reason. Every
    later ``status in SCORED`` or group by status then hashes and compares one object, not 10^5 fresh copies
    (reading 100 000 steps and their page ~0.05-0.1 s faster)."""
    return list(map({text: text for text in set(texts)}.__getitem__, texts))


def _keys(texts: Sequence[str], actions: list[dict[str, Any]]) -> list[str]:
    """``action_key`` of each action: the cell itself when every cell is already that text (a file cloudai
    wrote: one comparison, no encoding per row), else each action encoded."""
    whole = COMPACT.encode(actions)
    if len(whole) == sum(map(len, texts)) + len(texts) + 1 and whole == f"[{','.join(texts)}]":
        return list(texts)  # each cell is one whole JSON value, so the cells split the array where its items do
    return list(map(action_key, actions))


def _ends_without_newline(fd: int) -> bool:
    """Whether the open file's last byte is not a newline: its last row is torn (an empty file is not)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _parse_row(row: list[str]) -> Step | None:
    parsed = parse_row(row)
    if parsed is None:
        return None
    p = parsed
    return Step(p.step, p.episode, p.action, p.reward, p.observation, p.status, p.elapsed_s, action_key(p.action),
                reason=p.reason)  # fmt: skip
