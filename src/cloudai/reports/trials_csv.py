"""``trials.csv``: trajectory.csv made wide, for pandas and spreadsheets.

One row per recorded step: ``step, episode, status, reward, elapsed_s``, then one column per knob
(the action's keys), one per observed metric (``agent_metrics`` order) and one per env_param.
A knob missing from a row's action, or a metric not measured, is an empty cell.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from cloudai.reports.trajectory import Trajectory, read_env, read_trajectory

TRIALS_FILE = "trials.csv"


def trials_text(traj: Trajectory, metrics: Sequence[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step", "episode", "status", "reward", "elapsed_s", *traj.knobs, *metrics, *traj.env_params])
    for s in traj.steps:
        observed = [_cell(s.observation[i]) if i < len(s.observation) else "" for i in range(len(metrics))]
        writer.writerow([s.step, s.episode, s.status, _cell(s.reward), _cell(s.elapsed_s),
                         *(_cell(s.action.get(k)) for k in traj.knobs), *observed,
                         *(_cell(s.env.get(p)) for p in traj.env_params)])  # fmt: skip
    return out.getvalue()


def trials_from_dir(it_dir: Path, metrics: Sequence[str]) -> str:
    """``trials.csv`` text of one iteration dir (its trajectory.csv and env.csv)."""
    traj = read_trajectory(it_dir / "trajectory.csv")
    if (it_dir / "env.csv").exists():
        read_env(it_dir / "env.csv", traj)
    return trials_text(traj, metrics)


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
