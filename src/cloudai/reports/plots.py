"""The report's figures, each returned as a ``data:image/png;base64,...`` URI ready for an ``<img src>``.

matplotlib is imported inside each function (``import cloudai`` stays light) and used through its object API
(``Figure`` on the Agg canvas): no pyplot global state, no GUI backend, safe in any thread. PNG rather than
SVG keeps a 10 000-point scatter small and quick for a browser to draw.
"""

from __future__ import annotations

import base64
import io
import math
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from cloudai.reports.analysis import best_so_far, knob_kind

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from cloudai.reports.regimes import Regimes
    from cloudai.reports.trajectory import Trajectory

STATUS_STYLE = {
    "ok": ("tab:blue", "o"),
    "cached": ("tab:gray", "o"),
    "failed": ("tab:red", "x"),
    "constraint": ("tab:orange", "x"),
    "timeout": ("tab:purple", "x"),
    "pruned": ("tab:olive", "v"),
}
T = TypeVar("T")
MAX_CATEGORIES = 20
# At most this many markers per scatter: drawing and encoding them is the report's superlinear part at 10^4+
# steps. An even sample (every k-th) keeps the shape; the plot's title says when it was sampled.
MAX_POINTS = 1500
MAX_LABEL = 14  # characters of a category shown under its box


LEFT, RIGHT, TOP = 0.75, 0.2, 0.35  # margins in inches: y tick labels and label, right edge, title


def _figure(
    width: float = 8.0, height: float = 3.6, nrows: int = 1, ncols: int = 1, bottom: float = 0.6
) -> tuple[Figure, list[Axes]]:
    """A figure with margins fixed in inches (``bottom``: room for x tick labels and label) rather than a
    layout engine: constrained layout draws every figure twice and was ~40% of the report's time."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
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
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, list(axes.flat)


def _uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _even(items: list[T], limit: int = MAX_POINTS) -> list[T]:
    """Every k-th item, at most ``limit`` of them (all when there are few)."""
    return items if len(items) <= limit else items[:: -(-len(items) // limit)]


def _sampled_note(ax: Axes, total: int) -> None:
    if total > MAX_POINTS:
        ax.set_title(f"an even sample of the {total} points is drawn", fontsize="small")


def reward_curve(traj: Trajectory, ylabel: str = "reward") -> str:
    """Reward per step coloured by status, with the best-so-far line: how fast the search converged."""
    fig, (ax,) = _figure()
    size = 6 if len(traj.steps) > 2000 else 18
    _sampled_note(ax, len(traj.steps))
    for status, (color, marker) in STATUS_STYLE.items():
        rows = _even([s for s in traj.steps if s.status == status and not math.isnan(s.reward)])
        if rows:
            xs, ys = [s.step for s in rows], [s.reward for s in rows]
            ax.scatter(xs, ys, s=size, c=color, marker=marker, label=status, alpha=0.6)
    ax.step([s.step for s in traj.steps], best_so_far(traj), where="post", color="black", label="best so far")
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.legend(loc="lower right", fontsize="small")
    return _uri(fig)


def knob_effects(traj: Trajectory, log_knobs: Sequence[str] = (), ylabel: str = "reward") -> str:
    """Reward against each knob's value: box + strip for categorical knobs, scatter for ranges (log axis
    for ``log = true`` ranges)."""
    knobs = traj.knobs
    ncols = min(3, len(knobs))
    nrows = -(-len(knobs) // ncols)
    fig, axes = _figure(4.0 * ncols, 3.2 * nrows, nrows, ncols, bottom=0.9)
    scored = traj.scored()
    for ax, knob in zip(axes, knobs, strict=False):
        pairs = [(s.action.get(knob), s.reward) for s in scored if s.action.get(knob) is not None]
        if knob_kind([v for v, _ in pairs]) == "categorical":
            _categorical(ax, [(str(v), r) for v, r in pairs])
        else:
            numeric = _even([(v, r) for v, r in pairs if isinstance(v, int | float)])
            ax.scatter([float(v) for v, _ in numeric], [r for _, r in numeric], s=8, alpha=0.5)
            if knob in log_knobs and all(float(v) > 0 for v, _ in numeric):
                ax.set_xscale("log")
                ax.set_xlabel(f"{knob} (log scale)", fontsize="small")
        sampled = f" (an even sample of {len(pairs)} points)" if len(pairs) > MAX_POINTS else ""
        ax.set_title(knob + sampled, fontsize="medium" if not sampled else "small")
        ax.set_ylabel(ylabel, fontsize="small")
    for ax in axes[len(knobs) :]:
        ax.set_visible(False)
    return _uri(fig)


def _categorical(ax: Axes, pairs: list[tuple[str, float]]) -> None:
    groups: dict[str, list[float]] = {}
    for label, reward in pairs:
        groups.setdefault(label, []).append(reward)
    order = sorted(groups, key=lambda g: -len(groups[g]))[:MAX_CATEGORIES]
    ax.boxplot([groups[g] for g in order], showfliers=False)
    labels = [g if len(g) <= MAX_LABEL else g[: MAX_LABEL - 1] + "…" for g in order]
    ax.set_xticks(range(1, len(order) + 1), labels, rotation=30 if len(order) > 4 else 0, fontsize="small")
    jitter = random.Random(0)
    for i, label in enumerate(order, start=1):
        ys = _even(groups[label], MAX_POINTS // len(order))  # the boxes above use every point
        xs = [i + jitter.uniform(-0.15, 0.15) for _ in ys]
        ax.scatter(xs, ys, s=6, alpha=0.4, color="tab:blue")


def regime_bars(regimes: Regimes) -> str:
    """Per env param, the best configuration's mean reward per regime beside the mean of all configurations."""
    params = list(dict.fromkeys(r.param for r in regimes.rows))
    fig, axes = _figure(max(6.0, 4.5 * len(params)), 3.6, 1, len(params), bottom=0.9)
    for ax, param in zip(axes, params, strict=True):
        rows = [r for r in regimes.rows if r.param == param]
        x = list(range(len(rows)))
        ax.bar([i - 0.2 for i in x], [r.best_mean for r in rows], 0.4, label="best configuration")
        ax.bar([i + 0.2 for i in x], [r.all_mean for r in rows], 0.4, label="all configurations", color="gray")
        ax.set_xticks(x, [r.label for r in rows], rotation=30 if len(rows) > 3 else 0, fontsize="small")
        ax.set_xlabel(param)
        ax.set_ylabel("mean reward")
    axes[0].legend(fontsize="small")
    return _uri(fig)


def episode_returns(returns: dict[int, tuple[float, int]]) -> str:
    """Return per episode of a live-RL run: is the agent learning?"""
    fig, (ax,) = _figure()
    ax.plot(list(returns), [ret for ret, _ in returns.values()], marker="o")
    ax.set_xlabel("episode")
    ax.set_ylabel("return (sum of rewards)")
    return _uri(fig)


def overlaid_best(curves: dict[str, Trajectory]) -> str:
    """Best-so-far curves of several runs of one test on shared axes: label -> trajectory."""
    fig, (ax,) = _figure()
    for label, traj in curves.items():
        ax.step([s.step for s in traj.steps], best_so_far(traj), where="post", label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("best reward so far")
    ax.legend(fontsize="small")
    return _uri(fig)
