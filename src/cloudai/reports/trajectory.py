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
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

COLUMNS = ("step", "episode", "action", "reward", "observation", "status", "elapsed_s", "reason")
LEGACY_COLUMNS = COLUMNS[:-1]  # trajectories written before the reason column still report
STATUSES = frozenset({"ok", "cached", "failed", "constraint", "timeout", "pruned"})
SCORED = frozenset({"ok", "cached"})  # statuses whose reward measures the action
Value = bool | int | float | str | None
_canonical = json.JSONEncoder(sort_keys=True).encode  # Step.key: as json.dumps(action, sort_keys=True), made once


@dataclass(frozen=True, slots=True)
class Step:
    step: int
    episode: int
    action: dict[str, object]
    reward: float  # NaN when the row has none
    observation: list[object]
    status: str
    elapsed_s: float
    key: str  # the action as canonical JSON: equal configurations, equal keys
    env: dict[str, Value] = field(default_factory=dict)
    reason: str = ""  # why a failed/timeout/constraint step did not score
    # The reward is a real measurement of the action. Set once: every figure and table filters on it.
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
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    rows = list(csv.reader(io.StringIO(text)))
    traj = Trajectory()
    if len(rows) > 1 and not text.endswith("\n"):
        # no newline: the writer never committed this row, parseable or not (as cloudai.trajectory.records)
        rows[-1] = []
    if not rows or tuple(rows[0]) not in (COLUMNS, LEGACY_COLUMNS):
        found = rows[0] if rows else "(empty file)"
        traj.notes.append(f"{path.name}: unexpected header {found}; expected {','.join(COLUMNS)}")
        return traj
    knobs: dict[str, None] = {}
    for lineno, row in enumerate(rows[1:], start=2):
        step = _parse_row(row)
        if step is None or (traj.steps and step.step <= traj.steps[-1].step):
            why = "torn last line (interrupted run)" if lineno == len(rows) else "unparseable or out-of-order row"
            traj.notes.append(f"{path.name} line {lineno}: {why}; dropped")
            continue
        knobs.update(dict.fromkeys(step.action))
        traj.steps.append(step)
    traj.knobs = list(knobs)
    return traj


def _parse_row(row: list[str]) -> Step | None:
    if len(row) == len(LEGACY_COLUMNS):
        row = [*row, ""]
    if len(row) != len(COLUMNS):
        return None
    step, episode, action_text, reward, observation_text, status, elapsed, reason = row
    try:
        action = json.loads(action_text)
        observation = json.loads(observation_text) if observation_text else []
        parsed = Step(
            step=int(step),
            episode=int(episode or 0),
            action=action,
            reward=float(reward) if reward not in ("", "None", "null") else math.nan,
            observation=observation,
            status=status,
            elapsed_s=float(elapsed) if elapsed else math.nan,
            key=_canonical(action),
            reason=reason,
        )
    except (ValueError, TypeError):
        return None
    if not isinstance(action, dict) or not isinstance(observation, list) or status not in STATUSES:
        return None
    return parsed


def read_env(path: Path, traj: Trajectory) -> None:
    """Join ``env.csv`` onto ``traj`` by step. Unparseable rows (a torn last line) are skipped with a note."""
    with path.open(newline="", errors="replace") as fh:
        rows = list(csv.reader(fh))
    if not rows or not rows[0] or rows[0][0] != "step":
        traj.notes.append(f"{path.name}: expected a header starting with 'step'; regimes not shown")
        return
    params = rows[0][1:]
    good = []
    for lineno, row in enumerate(rows[1:], start=2):
        if len(row) == len(rows[0]) and row[0].strip().isdigit():
            good.append(row)
        else:
            traj.notes.append(f"{path.name} line {lineno}: unparseable row; dropped")
    # each distinct cell text converted once (an env param takes few values), then rows by lookups
    value = {text: _value(text) for text in {text for row in good for text in row[1:]}}.__getitem__
    by_step: dict[int, dict[str, Value]] = {}
    for row in good:
        by_step.setdefault(int(row[0]), dict(zip(params, map(value, row[1:]), strict=True)))
    missing = sum(1 for s in traj.steps if s.step not in by_step)
    if missing:
        traj.notes.append(f"{path.name}: {missing} step(s) have no env row")
    for s in traj.steps:  # each step's own (empty) env dict, filled in place: no copy of 10^5 steps
        s.env.update(by_step.get(s.step, {}))
    traj.env_params = params


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
