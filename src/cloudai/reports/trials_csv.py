"""``trials.csv``: trajectory.csv made wide, for pandas and spreadsheets.

One row per recorded step: ``step, episode, status, reward, elapsed_s``, then one column per knob
(the action's keys), one per observed metric (``agent_metrics`` order) and one per env_param.
A knob missing from a row's action, or a metric not measured, is an empty cell.

Streamed: the steps are read twice (their knobs, then the rows) and env.csv once beside the second
pass, so a 10^5-step run never sits in memory. env.csv's rows are joined in step order, as
``cloudai.trajectory.records`` writes them; the steps kept are those of ``read_trajectory``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from cloudai.reports.trajectory import Value, env_params, iter_env, iter_steps

TRIALS_FILE = "trials.csv"
CHUNK_CHARS = 1 << 16  # yield the text in pieces of about this size


def trials_chunks(it_dir: Path, metrics: Sequence[str]) -> Iterator[str]:
    """``trials.csv``'s text of one iteration dir (its trajectory.csv and env.csv), in pieces."""
    path, env_path = it_dir / "trajectory.csv", it_dir / "env.csv"
    notes: list[str] = []  # what the report says about damaged rows; trials.csv just leaves them out
    knobs = list(dict.fromkeys(k for s in iter_steps(path, notes) for k in s.action))
    params = (env_params(env_path, notes) if env_path.exists() else None) or []
    env_rows = iter_env(env_path, params, notes) if params else iter(())
    env_row = next(env_rows, None)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step", "episode", "status", "reward", "elapsed_s", *knobs, *metrics, *params])
    for s in iter_steps(path, notes):
        while env_row is not None and env_row[0] < s.step:
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
