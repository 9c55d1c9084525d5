"""Figures that name what they measure: every observation against step, trial durations, the Pareto front.

Same conventions as ``plots`` (matplotlib's object API on Agg, PNG data URIs, fixed margins).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cloudai.reports.pareto import pareto_indices
from cloudai.reports.plots import STATUS_STYLE, _figure, _uri

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
    fig, axes = _figure(5.0 * ncols, 3.0 * nrows, nrows, ncols)
    size = 6 if len(traj.steps) > 2000 else 14
    for index, (ax, metric) in enumerate(zip(axes, metrics, strict=False)):
        for status, (color, marker) in STATUS_STYLE.items():
            points = [(s.step, _value(s, index)) for s in traj.steps if s.status == status]
            points = [(x, y) for x, y in points if math.isfinite(y)]
            if points:
                ax.scatter([x for x, _ in points], [y for _, y in points], s=size, c=color, marker=marker,
                           label=status, alpha=0.6)  # fmt: skip
        ax.set_title(metric, fontsize="medium")
        ax.set_xlabel("step")
        ax.set_ylabel(entry.label(metric))
    axes[0].legend(fontsize="x-small")
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    return _uri(fig)


def durations(traj: Trajectory) -> str:
    """Each trial's wall time against step, coloured by status (pruned trials should sit low)."""
    fig, (ax,) = _figure()
    for status, (color, marker) in STATUS_STYLE.items():
        rows = [s for s in traj.steps if s.status == status and math.isfinite(s.elapsed_s)]
        if rows:
            ax.scatter([s.step for s in rows], [s.elapsed_s for s in rows], s=12, c=color, marker=marker, label=status)
    ax.set_xlabel("step")
    ax.set_ylabel("trial duration [s]")
    ax.legend(fontsize="small")
    return _uri(fig)


def pareto(points: Sequence[Sequence[float]], names: Sequence[str], directions: Sequence[str]) -> str:
    """2 objectives: scatter with the front drawn, dominated trials grey; 3+: parallel coordinates."""
    front = set(pareto_indices(points, directions))
    if len(names) == 2:
        fig, (ax,) = _figure(6.0, 4.2)
        dominated = [p for i, p in enumerate(points) if i not in front]
        ax.scatter([p[0] for p in dominated], [p[1] for p in dominated], s=12, c="tab:gray", label="dominated")
        best = sorted((points[i] for i in front), key=lambda p: p[0])
        ax.plot([p[0] for p in best], [p[1] for p in best], "o-", color="tab:red", label="Pareto front")
        ax.set_xlabel(f"{names[0]} ({directions[0]})")
        ax.set_ylabel(f"{names[1]} ({directions[1]})")
        ax.legend(fontsize="small")
        return _uri(fig)
    fig, (ax,) = _figure(max(6.0, 2.0 * len(names)), 4.0)
    lows = [min(p[j] for p in points) for j in range(len(names))]
    highs = [max(p[j] for p in points) for j in range(len(names))]
    for i, p in enumerate(points):
        ys = [(v - lo) / (hi - lo) if hi > lo else 0.5 for v, lo, hi in zip(p, lows, highs, strict=True)]
        on = i in front
        ax.plot(
            range(len(names)),
            ys,
            color="tab:red" if on else "tab:gray",
            alpha=0.9 if on else 0.3,
            lw=1.5 if on else 0.8,
        )
    ax.set_xticks(range(len(names)), [f"{n} ({d})" for n, d in zip(names, directions, strict=True)], fontsize="small")
    ax.set_ylabel("scaled to [min, max] of each objective")
    return _uri(fig)
