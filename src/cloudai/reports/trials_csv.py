"""``trials.csv``: trajectory.csv made wide, for pandas and spreadsheets.

One row per recorded step: ``step, episode, status, reward, elapsed_s``, then one column per knob
(the action's keys), one per observed metric (``agent_metrics`` order) and one per env_param.
A knob missing from a row's action, or a metric not measured, is an empty cell.

Streamed: trajectory.csv and env.csv are read side by side, one row at a time, and the text written as it
comes, so a 10^5-step run never sits in memory. env.csv's rows are joined in step order, as
``cloudai.trajectory.records`` writes them; the steps kept are those of ``read_trajectory``.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from cloudai.atomicfile import atomic_write
from cloudai.recordfiles import ENV_FILE, TRAJECTORY_FILE
from cloudai.reports.env_csv import env_params, iter_env
from cloudai.reports.trajectory import Value, iter_steps

TRIALS_FILE = "trials.csv"
CHUNK_CHARS = 1 << 16  # the text goes out in pieces of about this size


def write_trials(it_dir: Path, metrics: Sequence[str]) -> Path:
    """Write ``it_dir/trials.csv`` from its trajectory.csv and env.csv (atomically); its path.

    One pass when the first step names every knob (always, in a cloudai run: each action names the whole
    space); a later step with a new knob means one more pass to learn all the columns first."""
    try:
        return atomic_write(it_dir / TRIALS_FILE, _chunks(it_dir, metrics, None))
    except _NewKnob:
        knobs = dict.fromkeys(k for s in iter_steps(it_dir / TRAJECTORY_FILE, []) for k in s.action)
        return atomic_write(it_dir / TRIALS_FILE, _chunks(it_dir, metrics, list(knobs)))


class _NewKnob(Exception):
    """A step names a knob the header lacks: the columns must be learnt from every step first."""


def _chunks(it_dir: Path, metrics: Sequence[str], knobs: list[str] | None) -> Iterator[str]:
    """The text in pieces; ``knobs`` None: the first step's, ``_NewKnob`` when a later one has another."""
    notes: list[str] = []  # what the report says about damaged rows; trials.csv just leaves them out
    steps = iter_steps(it_dir / TRAJECTORY_FILE, notes)
    first = next(steps, None)
    if knobs is None:
        knobs = [] if first is None else list(first.action)
    env_path = it_dir / ENV_FILE
    params = (env_params(env_path, notes) if env_path.exists() else None) or []
    env_rows = iter_env(env_path, params, notes) if params else iter(())
    env_row = next(env_rows, None)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step", "episode", "status", "reward", "elapsed_s", *knobs, *metrics, *params])
    known = set(knobs)
    for s in itertools.chain([first] if first is not None else [], steps):
        if not known.issuperset(s.action):
            raise _NewKnob
        while env_row is not None and env_row[0] < s.step:  # env.csv is in step order, as it is written
            env_row = next(env_rows, None)
        env: dict[str, Value] = env_row[1] if env_row is not None and env_row[0] == s.step else {}
        observed = [_cell(s.observation[i]) if i < len(s.observation) else "" for i in range(len(metrics))]
        writer.writerow([s.step, s.episode, s.status, _cell(s.reward), _cell(s.elapsed_s),
                         *(_cell(s.action.get(k)) for k in knobs), *observed,
                         *(_cell(env.get(p)) for p in params)])  # fmt: skip
        if out.tell() >= CHUNK_CHARS:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if value != value else repr(value)  # NaN: not measured
    if isinstance(value, int | str):
        return str(value)
    return json.dumps(value)
