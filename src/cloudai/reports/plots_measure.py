"""Charts that name what they measure: every observation against step, trial durations, the Pareto front.

Same conventions as ``plots`` (specs for ``static/report.js``, points as rows of the agent run's table).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING

from cloudai.reports.pareto import pareto_indices
from cloudai.reports.plots import PAGE_WIDTH, Spec, attribute, by_step, spec
from cloudai.reports.thin import MAX_POINTS, even

if TYPE_CHECKING:
    from cloudai.reports.chartdata import Rows
    from cloudai.reports.load import Entry
    from cloudai.reports.trajectory import Step, Trajectory


def _value(step: Step, index: int) -> float:
    try:
        value = step.observation[index]
    except IndexError:
        return math.nan
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def _column(steps: Sequence[Step], index: int) -> list[float]:
    """``_value`` of each step: as the observations themselves when each has a float there (two C passes)."""
    found = list(map(attrgetter("observation"), steps))
    if min(map(len, found), default=0) > index:
        column = list(map(itemgetter(index), found))
        if set(map(type, column)) <= {float}:
            return column  # float(v) of a float is v
    return [_value(s, index) for s in steps]


def observations(rows: Rows, traj: Trajectory, entry: Entry) -> list[Spec]:
    """One chart per observed metric, its value at each step coloured by status (named, with units); two to a row."""
    metrics = list(entry.agent_metrics)
    width = PAGE_WIDTH if len(metrics) == 1 else PAGE_WIDTH // 2 - 10
    charts = []
    for index, metric in enumerate(metrics):
        series, thinned = by_step(rows, traj, lambda steps, i=index: _column(steps, i), f"obs:{index}")
        title = f"{metric} ({thinned})" if thinned else metric
        charts.append(spec(rows, series, "step", entry.label(metric), title, width=width, height=280))
    return charts


def durations(rows: Rows, traj: Trajectory) -> Spec:
    """Each trial's wall time against step, coloured by status (pruned trials should sit low)."""
    series, thinned = by_step(rows, traj, attribute("elapsed_s"), "elapsed")
    return spec(rows, series, "step", "trial duration [s]", thinned)


def pareto(
    rows: Rows, steps: Sequence[Step], points: Sequence[Sequence[float]], slots: Sequence[int],
    names: Sequence[str], directions: Sequence[str],
) -> Spec:  # fmt: skip
    """``steps[i]`` measured ``points[i]`` (its observations at ``slots``). 2 objectives: a scatter with the front
    drawn, dominated trials grey; 3+: parallel coordinates, each objective scaled to its [min, max]. A dominated
    cloud larger than ``MAX_POINTS`` is drawn as an even sample (the title says)."""
    front = pareto_indices(points, directions)
    on_front = set(front)
    dominated = [i for i in range(len(points)) if i not in on_front]
    title = f"an even sample of the {len(dominated)} dominated points is drawn" if len(dominated) > MAX_POINTS else ""
    grey: Spec = {"label": "dominated", "color": "rgba(127,127,127,0.5)", "size": 5,
            "rows": rows.refs(steps[i] for i in even(dominated))}  # fmt: skip
    axes = [f"{n} ({d})" for n, d in zip(names, directions, strict=True)]
    if len(names) == 2:
        best = sorted(front, key=lambda i: points[i][0])
        line: Spec = {"label": "Pareto front", "color": "#d62728", "size": 6, "line": "line",
                      "rows": rows.refs(steps[i] for i in best)}  # fmt: skip
        x, y = f"obs:{slots[0]}", f"obs:{slots[1]}"
        return spec(rows, [grey | {"x": x, "y": y}, line | {"x": x, "y": y}], axes[0], axes[1], title,
                    width=560, height=400)  # fmt: skip
    red: Spec = {"label": "Pareto front", "color": "#d62728", "rows": rows.refs(steps[i] for i in front)}
    lows = [min(p[j] for p in points) for j in range(len(names))]
    highs = [max(p[j] for p in points) for j in range(len(names))]
    width = max(560, 180 * len(names))
    parallel = spec(rows, [grey, red], "", "scaled to [min, max] of each objective", title, width=width, height=380)
    return parallel | {"kind": "parallel", "axes": axes, "cols": [f"obs:{i}" for i in slots], "lows": lows,
                       "highs": highs}  # fmt: skip
