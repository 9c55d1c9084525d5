"""Figures that name what they measure: every observation against step, trial durations, the Pareto front.

Same conventions as ``plots`` (matplotlib's object API on Agg, PNG data URIs, fixed margins).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cloudai.reports.pareto import pareto_indices
from cloudai.reports.plots import _figure, _uri, by_step, scatter, status_series, title
from cloudai.reports.thin import MAX_POINTS, even

if TYPE_CHECKING:
    from cloudai.reports.load import Entry
    from cloudai.reports.trajectory import Step, Trajectory


def _value(step: Step, index: int) -> float:
    try:
        value = step.observation[index]
    except IndexError:
        return math.nan
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def observations(traj: Trajectory, entry: Entry) -> str:
    """One panel per observed metric, its value at each step coloured by status (named, with units)."""
    metrics = list(entry.agent_metrics)
    ncols = min(2, len(metrics))
    nrows = -(-len(metrics) // ncols)
    fig, axes = _figure(5.0 * ncols, 3.0 * nrows, nrows, ncols, count=len(metrics))
    size = 6 if len(traj.steps) > 2000 else 14
    for index, (ax, metric) in enumerate(zip(axes, metrics, strict=False)):
        thinned = by_step(ax, status_series(traj, lambda s, i=index: _value(s, i)), size, alpha=0.6)
        title(ax, f"{metric} ({thinned})" if thinned else metric, "small" if thinned else "medium")
        ax.set_xlabel("step")
        ax.set_ylabel(entry.label(metric))
    axes[0].legend(fontsize="x-small")
    return _uri(fig)


def durations(traj: Trajectory) -> str:
    """Each trial's wall time against step, coloured by status (pruned trials should sit low)."""
    fig, (ax,) = _figure()
    thinned = by_step(ax, status_series(traj, lambda s: s.elapsed_s), 12)
    if thinned:
        title(ax, thinned)
    ax.set_xlabel("step")
    ax.set_ylabel("trial duration [s]")
    ax.legend(fontsize="small")
    return _uri(fig)


def pareto(points: Sequence[Sequence[float]], names: Sequence[str], directions: Sequence[str]) -> str:
    """2 objectives: scatter with the front drawn, dominated trials grey (an even sample of a large cloud, the
    title says); 3+: parallel coordinates, one line collection (one artist, not one per trial)."""
    front = set(pareto_indices(points, directions))
    if len(names) == 2:
        fig, (ax,) = _figure(6.0, 4.2)
        dominated = [(p[0], p[1]) for i, p in enumerate(points) if i not in front]
        scatter(ax, even(dominated), s=12, c="tab:gray", label="dominated")
        if len(dominated) > MAX_POINTS:
            title(ax, f"an even sample of the {len(dominated)} dominated points is drawn")
        best = sorted((points[i] for i in front), key=lambda p: p[0])
        ax.plot([p[0] for p in best], [p[1] for p in best], "o-", color="tab:red", label="Pareto front")
        ax.set_xlabel(f"{names[0]} ({directions[0]})")
        ax.set_ylabel(f"{names[1]} ({directions[1]})")
        ax.legend(fontsize="small")
        return _uri(fig)
    from matplotlib.collections import LineCollection

    fig, (ax,) = _figure(max(6.0, 2.0 * len(names)), 4.0)
    lows = [min(p[j] for p in points) for j in range(len(names))]
    highs = [max(p[j] for p in points) for j in range(len(names))]
    lines = {True: [], False: []}
    for i, p in enumerate(points):
        ys = [(v - lo) / (hi - lo) if hi > lo else 0.5 for v, lo, hi in zip(p, lows, highs, strict=True)]
        lines[i in front].append(list(enumerate(ys)))
    ax.add_collection(LineCollection(lines[False], colors="tab:gray", alpha=0.3, linewidths=0.8))
    ax.add_collection(LineCollection(lines[True], colors="tab:red", alpha=0.9, linewidths=1.5))
    ax.set_xlim(-0.1, len(names) - 0.9)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xticks(range(len(names)), [f"{n} ({d})" for n, d in zip(names, directions, strict=True)], fontsize="small")
    ax.set_ylabel("scaled to [min, max] of each objective")
    return _uri(fig)
