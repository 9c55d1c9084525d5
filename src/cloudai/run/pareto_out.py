"""The Pareto front of a multi-objective run: ``pareto.csv``, ``pareto/<step>.toml`` and a terminal table.

Written beside trajectory.csv when the entry has two or more ``agent_objectives``, from every
``ok`` step of the iteration (cached steps repeat an earlier measurement; constraint, failed
and timed-out steps are not feasible). ``pareto.csv``: ``step``, one column per objective (its
metric name), then one per knob and env_param. Each front point also gets a ready-to-run test
TOML in ``pareto/<step>.toml`` (the same form as best.toml). Rewritten whole at each run end.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.atomicfile import atomic_write
from cloudai.display import show_action
from cloudai.reports.pareto import pareto_indices
from cloudai.run import Echo
from cloudai.run.best import best_text

if TYPE_CHECKING:
    from cloudai.config.scenario import RunEntry
    from cloudai.envs.base import Feedback
    from cloudai.space import Space

PARETO_FILE = "pareto.csv"
PARETO_DIR = "pareto"
MAX_TABLE_ROWS = 20


def pareto_front(entry: RunEntry, steps: Sequence[Feedback]) -> list[tuple[Feedback, list[float]]]:
    """The non-dominated ``ok`` steps with their objective values, in step order."""
    metrics = list(entry.agent.metrics)
    slots = [metrics.index(o.metric) for o in entry.agent.objectives]
    measured = [f for f in sorted(steps, key=lambda f: f.step) if f.status == "ok"]
    points = [[float(f.observation[i]) for i in slots] for f in measured]
    front = pareto_indices(points, [o.direction for o in entry.agent.objectives])
    return [(measured[i], points[i]) for i in front]


def write_pareto(
    entry: RunEntry, space: Space, steps: Sequence[Feedback], out_dir: Path, echo: Echo, *, recorded: int
) -> None:
    """Write the front's files and print it; nothing with fewer than two objectives.

    ``steps``: at least every ``ok`` one; ``recorded``: how many steps the iteration recorded (its TOMLs say)."""
    if len(entry.agent.objectives) < 2:
        return
    front = pareto_front(entry, steps)
    objectives = [o.metric for o in entry.agent.objectives]
    knobs = [d.name for d in space.dims]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["step", *objectives, *knobs])
    for feedback, values in front:
        knob_values = {**feedback.action, **feedback.env_params}
        writer.writerow([feedback.step, *map(repr, values), *(_cell(knob_values.get(k)) for k in knobs)])
    atomic_write(out_dir / PARETO_FILE, text.getvalue())
    tomls = out_dir / PARETO_DIR
    shutil.rmtree(tomls, ignore_errors=True)
    tomls.mkdir(parents=True)
    for feedback, _ in front:
        note = "On the Pareto front of " + ", ".join(f"{o.metric} ({o.direction})" for o in entry.agent.objectives)
        body = best_text(entry, space, feedback, recorded, [note], kind=f"pareto_{feedback.step}")
        atomic_write(tomls / f"{feedback.step}.toml", body)
    for line in front_table(entry, front):
        echo(line)
    echo(f"  front: {out_dir / PARETO_FILE}; one test TOML per point in {tomls}/")


def front_table(entry: RunEntry, front: Sequence[tuple[Feedback, list[float]]]) -> list[str]:
    """A small aligned table: step, each objective (direction), the action."""
    heads = ["step", *(f"{o.metric} ({o.direction})" for o in entry.agent.objectives), "action"]
    rows = [[str(f.step), *(f"{v:.6g}" for v in values), show_action(f.action)] for f, values in front]
    shown = rows[:MAX_TABLE_ROWS]
    widths = [max(len(r[i]) for r in [heads, *shown]) for i in range(len(heads) - 1)]
    lines = [f"{entry.id}: Pareto front, {len(front)} trial(s):"]
    for row in [heads, *shown]:
        lines.append("  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1])
    if len(rows) > len(shown):
        lines.append(f"  ... {len(rows) - len(shown)} more in {PARETO_FILE}")
    return lines


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
