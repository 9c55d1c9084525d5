"""The report's figures, each returned as a ``data:image/png;base64,...`` URI ready for an ``<img src>``.

matplotlib is imported inside each function (``import cloudai`` stays light) and used through its object API
(``Figure`` on the Agg canvas): no pyplot global state, no GUI backend, safe in any thread. PNG rather than
SVG keeps a 10 000-point scatter small and quick for a browser to draw.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cloudai.reports.analysis import best_so_far
from cloudai.reports.thin import MAX_POINTS, changes, envelope

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from cloudai.reports.trajectory import Step, Trajectory

STATUS_STYLE = {
    "ok": ("tab:blue", "o"),
    "cached": ("tab:gray", "o"),
    "failed": ("tab:red", "x"),
    "constraint": ("tab:orange", "x"),
    "timeout": ("tab:purple", "x"),
    "pruned": ("tab:olive", "v"),
}


LEFT, RIGHT, TOP = 0.75, 0.2, 0.35  # margins in inches: y tick labels and label, right edge, title
DPI = 90
PAGE_WIDTH = 12.4  # inches: at DPI, the page's 1150 px less its padding, so a full-width plot is drawn 1:1


def _figure(
    width: float = PAGE_WIDTH, height: float = 3.6, nrows: int = 1, ncols: int = 1, bottom: float = 0.6, count: int = 0
) -> tuple[Figure, list[Axes]]:
    """A figure with margins fixed in inches (``bottom``: room for x tick labels and label) rather than a
    layout engine: constrained layout draws every figure twice and was ~40% of the report's time.
    ``count``: the first ``count`` cells of the grid get an axes (default all); an axes costs as much to make
    as a small figure's drawing, so none is made to be hidden."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    axes_w = (width - RIGHT - ncols * LEFT) / ncols  # every subplot keeps its own y labels
    axes_h = (height - nrows * (TOP + bottom)) / nrows  # and its own title and x labels
    fig.subplots_adjust(
        left=LEFT / width,
        right=1 - RIGHT / width,
        bottom=bottom / height,
        top=1 - TOP / height,
        wspace=LEFT / axes_w,
        hspace=(TOP + bottom) / axes_h,
    )
    grid = fig.add_gridspec(nrows, ncols)
    return fig, [fig.add_subplot(grid[i // ncols, i % ncols]) for i in range(count or nrows * ncols)]


def _uri(fig: Figure) -> str:
    """The figure as a PNG data URI, at zlib level 3: encoding at the default level 6 took half again as long
    for ~15 % fewer bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": 3})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def title(ax: Axes, text: str, size: str = "small") -> None:
    """``ax.set_title`` at a fixed height: left to itself, matplotlib measures the y tick labels of every
    axes on each draw to lift the title clear of an offset text (~20 % of a small figure's time)."""
    ax.set_title(text, fontsize=size, y=1.0)


def scatter(ax: Axes, points: Sequence[tuple[float, float]], **style: Any) -> None:
    """``ax.scatter`` of (x, y) pairs, handed over as float arrays: from Python lists matplotlib builds a masked
    array element by element, which cost more than the drawing."""
    import numpy as np

    xy = np.array(points, dtype=float).reshape(-1, 2)
    ax.scatter(xy[:, 0], xy[:, 1], **style)


def by_step(ax: Axes, series: dict[str, list[tuple[float, float]]], size: float, **style: Any) -> str:
    """Status -> (step, value) points, each status in its own colour and marker; a series longer than
    ``MAX_POINTS`` as its envelope (``thin.envelope``, which the page's note explains). Returns what to add to the
    title then ("" if nothing)."""
    for status, points in series.items():
        color, marker = STATUS_STYLE[status]
        scatter(ax, envelope(points), s=size, c=color, marker=marker, label=status, **style)
    if all(len(points) <= MAX_POINTS for points in series.values()):
        return ""
    return f"{sum(map(len, series.values()))} points: their outline and an even sample drawn"


def status_series(traj: Trajectory, value: Callable[[Step], float]) -> dict[str, list[tuple[float, float]]]:
    """Status -> (step, value) of its steps with a finite value, in ``STATUS_STYLE`` order; empty ones left out."""
    series: dict[str, list[tuple[float, float]]] = {status: [] for status in STATUS_STYLE}
    for s in traj.steps:
        y = value(s)
        if s.status in series and math.isfinite(y):
            series[s.status].append((s.step, y))
    return {status: points for status, points in series.items() if points}


def reward_curve(traj: Trajectory, ylabel: str = "reward") -> str:
    """Reward per step coloured by status, with the best-so-far line: how fast the search converged."""
    fig, (ax,) = _figure()
    thinned = by_step(ax, status_series(traj, lambda s: s.reward), 6 if len(traj.steps) > 2000 else 18, alpha=0.6)
    if thinned:
        title(ax, thinned)
    xs, ys = changes([s.step for s in traj.steps], best_so_far(traj))
    ax.step(xs, ys, where="post", color="black", label="best so far")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.legend(loc="lower right", fontsize="small")
    return _uri(fig)


def episode_returns(returns: dict[int, tuple[float, int]]) -> str:
    """Return per episode of a live-RL run: is the agent learning? A long run as its envelope (the title says)."""
    fig, (ax,) = _figure()
    points = [(float(ep), ret) for ep, (ret, _) in returns.items()]
    drawn = envelope(points)
    xy = list(zip(*drawn, strict=True)) if drawn else [[], []]
    ax.plot(xy[0], xy[1], marker="o" if len(drawn) <= 200 else "")
    if len(drawn) < len(points):
        title(ax, f"{len(points)} episodes: each of {MAX_POINTS // 4} bins' min and max and an even sample drawn")
    ax.set_xlabel("episode")
    ax.set_ylabel("return (sum of rewards)")
    return _uri(fig)


def overlaid_best(curves: dict[str, Trajectory]) -> str:
    """Best-so-far curves of several runs of one test on shared axes: label -> trajectory."""
    fig, (ax,) = _figure()
    for label, traj in curves.items():
        ax.step(*changes([s.step for s in traj.steps], best_so_far(traj)), where="post", label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("best reward so far")
    ax.legend(fontsize="small")
    return _uri(fig)
