"""The report's charts against step and episode, each a spec that ``static/report.js`` draws with uPlot.

A spec is plain JSON (``html.chart`` embeds it): ``title``, ``xlabel``, ``ylabel``, ``rows`` (the name of the
agent run's ``chartdata.Rows`` table its points refer to), ``series`` and layout (``width``, ``height`` in px,
``xlog``, ``xrange``, ``ticks``: ``[x, label, rotated]``, ``boxes``: ``[x, half width, q1, q3, median, low
whisker, high whisker]``). A series has ``label``, ``color``, ``size`` (marker diameter, px; 0: none) and
``line`` (``"step"``, ``"line"`` or absent), and its points either as ``rows`` (row numbers) whose ``x``/``y``
are columns of the table (``"step"``, ``"reward"``, ``"elapsed"``, ``"obs:<i>"``, ``"knob:<j>"``), or as
explicit ``xs``/``ys`` (a point's ``rows`` entry, or its ``tips`` text, is what hovering it shows).
Nothing here imports a plotting library: building a spec is list work, bounded by ``thin``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING

from cloudai.display import show_action
from cloudai.reports.chartdata import finite
from cloudai.reports.thin import MAX_POINTS, change_index, envelope, envelope_index

if TYPE_CHECKING:
    from cloudai.reports.chartdata import Rows
    from cloudai.reports.trajectory import Step, Trajectory

Spec = dict[str, object]
STATUS_STYLE = {  # the tab10 colours the PNG figures had
    "ok": "rgba(31,119,180,0.6)",
    "cached": "rgba(127,127,127,0.6)",
    "failed": "rgba(214,39,40,0.8)",
    "constraint": "rgba(255,127,14,0.8)",
    "timeout": "rgba(148,103,189,0.8)",
    "pruned": "rgba(188,189,34,0.8)",
}
Values = Callable[[list["Step"]], list[float]]  # the values of a list of steps (one per step), e.g. their rewards
PAGE_WIDTH = 1100  # px: the page's 1150 px less its padding
HEIGHT = 320


def by_step(rows: Rows, traj: Trajectory, values_of: Values, y: str) -> tuple[list[Spec], str]:
    """One series per status of the steps with a finite value (``values_of``: a list of steps' values, e.g.
    ``attribute("reward")``; the table's column ``y``), in
    ``STATUS_STYLE`` order, each longer than ``MAX_POINTS`` as its envelope (``thin.envelope``, which the page's
    note explains). Returns the series and what to add to the title then ("" if nothing)."""
    groups = traj.by_status()
    size = 3 if len(traj.steps) > 2000 else 5
    series: list[Spec] = []
    counts: list[int] = []
    for status, color in STATUS_STYLE.items():
        steps = groups.get(status, [])
        values = values_of(steps)
        if not all(map(math.isfinite, values)):
            keep = [i for i, v in enumerate(values) if math.isfinite(v)]
            steps, values = [steps[i] for i in keep], [values[i] for i in keep]
        if steps:
            drawn = rows.refs(steps[i] for i in envelope_index(values))
            series.append({"label": status, "color": color, "size": size, "x": "step", "y": y, "rows": drawn})
            counts.append(len(steps))
    if all(n <= MAX_POINTS for n in counts):
        return series, ""
    return series, f"{sum(counts)} points: their outline and an even sample drawn"


def attribute(name: str) -> Values:
    """The values of a float attribute of each step (``reward``, ``elapsed_s``), in one C pass."""
    get = attrgetter(name)
    return lambda steps: list(map(get, steps))


def spec(rows: Rows | None, series: list[Spec], xlabel: str, ylabel: str, title: str = "", **layout: object) -> Spec:
    """A chart spec (see the module docstring); ``layout`` overrides the full-width default size."""
    out: Spec = {"title": title, "xlabel": xlabel, "ylabel": ylabel, "series": series}
    out |= {"width": PAGE_WIDTH, "height": HEIGHT} | layout
    if rows is not None:
        out["rows"] = rows.name
    return out


def best_line(rows: Rows, traj: Trajectory) -> Spec:
    """Best reward so far as a step line through the points where it changes; each point is the step that set
    that best, so hovering it shows the configuration to beat."""
    xs, ys, setters = best_changes(traj)
    return {"label": "best so far", "color": "black", "size": 0, "line": "step", "xs": xs, "ys": list(map(finite, ys)),
            "rows": [None if s is None else rows.refs([s])[0] for s in setters]}  # fmt: skip


def best_changes(traj: Trajectory) -> tuple[list[float], list[float], list[Step | None]]:
    """The best-so-far step function where it changes (``thin.changes``): step, best reward (NaN before the first
    scored step), the step that set it."""
    xs, ys, setters, _ = _best_changes(traj)
    return xs, ys, setters


def _best_changes(traj: Trajectory) -> tuple[list[float], list[float], list[Step | None], list[float]]:
    """``best_changes`` and, at each kept point, the trial time spent so far (the sum of the trials' durations).
    A long run's by numpy columns (``_best_changes_columns``), a short one's step by step (no numpy import)."""
    if len(traj.steps) >= COLUMNS_FROM:
        return _best_changes_columns(traj.steps)
    best: Step | None = None
    ys: list[float] = []
    setters: list[Step | None] = []
    spent: list[float] = []
    total = 0.0
    for s in traj.steps:
        if s.scored and (best is None or s.reward > best.reward):
            best = s
        total += s.elapsed_s if math.isfinite(s.elapsed_s) else 0.0
        ys.append(math.nan if best is None else best.reward)
        setters.append(best)
        spent.append(total)
    keep = change_index(ys)
    return (
        [traj.steps[i].step for i in keep],
        [ys[i] for i in keep],
        [setters[i] for i in keep],
        [spent[i] for i in keep],
    )


COLUMNS_FROM = 4096  # steps from which ``_best_changes`` goes by numpy columns (~5x faster at 10^5 steps)


def _best_changes_columns(steps: list[Step]) -> tuple[list[float], list[float], list[Step | None], list[float]]:
    """``_best_changes`` by numpy columns, the same values: a step sets the best when it scores and beats the best
    before it (the first scored step always: even at -inf), the earliest on ties; the best shown is that step's own
    reward (its sign of zero); time spent is the running sum of the finite durations from 0.0, in step order."""
    import numpy as np

    n = len(steps)
    rewards = np.fromiter(map(attrgetter("reward"), steps), np.float64, n)
    scored = np.fromiter(map(attrgetter("scored"), steps), np.bool_, n)
    elapsed = np.fromiter(map(attrgetter("elapsed_s"), steps), np.float64, n)
    running = np.maximum.accumulate(np.where(scored, rewards, -np.inf))
    seen = np.logical_or.accumulate(scored)
    before, seen_before = np.concatenate(([-np.inf], running[:-1])), np.concatenate(([False], seen[:-1]))
    sets = scored & (~seen_before | (rewards > before))
    setter = np.maximum.accumulate(np.where(sets, np.arange(n), -1))
    ys = np.where(seen, rewards[setter], np.nan)
    spent = np.cumsum(np.where(np.isfinite(elapsed), elapsed, 0.0)) + 0.0  # + 0.0: -0.0 sums to 0.0, as from 0.0
    differs = (ys[1:] != ys[:-1]) & ~(np.isnan(ys[1:]) & np.isnan(ys[:-1]))  # thin.change_index's points
    keep: list[int] = sorted({0, n - 1, *(np.flatnonzero(differs) + 1).tolist()})
    at = setter[keep].tolist()
    return (
        [steps[i].step for i in keep],
        ys[keep].tolist(),
        [None if i < 0 else steps[i] for i in at],
        spent[keep].tolist(),
    )


def reward_curve(rows: Rows, traj: Trajectory, ylabel: str = "reward") -> Spec:
    """Reward per step coloured by status, with the best-so-far line: how fast the search converged."""
    series, thinned = by_step(rows, traj, attribute("reward"), "reward")
    return spec(rows, [*series, best_line(rows, traj)], "step", ylabel, thinned)


def episode_returns(returns: dict[int, tuple[float, int]]) -> Spec:
    """Return per episode of a live-RL run: is the agent learning? A long run as its envelope (the title says)."""
    points = [(float(ep), ret) for ep, (ret, _) in returns.items()]
    drawn = envelope(points)
    tips = [f"episode {ep:g}: return {ret:.6g} over {returns[int(ep)][1]} steps" for ep, ret in drawn]
    series: Spec = {"label": "return", "color": "#1f77b4", "size": 5 if len(drawn) <= 200 else 0, "line": "line",
                    "xs": [ep for ep, _ in drawn], "ys": [finite(ret) for _, ret in drawn], "tips": tips}  # fmt: skip
    title = ""
    if len(drawn) < len(points):
        title = f"{len(points)} episodes: each of {MAX_POINTS // 4} bins' min and max and an even sample drawn"
    return spec(None, [series], "episode", "return (sum of rewards)", title)


def overlaid_best(curves: dict[str, Trajectory], x: str = "step") -> Spec:
    """Best-so-far curves of several runs of one test on shared axes: label -> trajectory. Hovering a point says
    which run, the step and the configuration that set that best. ``x``: ``"step"``, or ``"time"``: the trial time
    spent so far (the sum of the trials' durations: a run that got there sooner is to the left, whatever its
    step count; with parallel trials it exceeds the wall clock)."""
    series: list[Spec] = []
    for n, (label, traj) in enumerate(curves.items()):
        steps, ys, setters, spent = _best_changes(traj)
        xs = spent if x == "time" else steps
        tips = [_best_tip(label, st, y, s, sp) for st, y, s, sp in zip(steps, ys, setters, spent, strict=True)]
        series.append({"label": label, "color": PALETTE[n % len(PALETTE)], "size": 4, "line": "step", "xs": xs,
                       "ys": list(map(finite, ys)), "tips": tips})  # fmt: skip
    xlabel = "trial time spent [s] (sum of trial durations)" if x == "time" else "step"
    return spec(None, series, xlabel, "best reward so far")


def _best_tip(label: str, step: float, best: float, setter: Step | None, spent: float) -> str:
    where = "" if setter is None else f" (set at step {setter.step})\n{show_action(setter.action, sort_keys=True)}"
    return f"{label}\nstep {step} ({spent:.4g} s of trials): best so far {best:.6g}{where}"


PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
