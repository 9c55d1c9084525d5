"""Reward against each knob's value: box + strip for a categorical knob, a scatter for a range (log for ``log = true``).

Each knob is a band of x, up to ``PER_ROW`` bands side by side on one axes with one reward axis per row,
rather than an axes per knob: an axes (its y axis, spines, title) cost as much to draw as everything in its
panel. Each band maps its knob's values onto its own stretch of x, with its own tick labels, and is named
above. Same conventions as ``plots`` (matplotlib's object API on Agg, PNG data URI).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cloudai.reports.analysis import knob_kind
from cloudai.reports.plots import _figure, _uri, scatter
from cloudai.reports.thin import MAX_POINTS, even

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from cloudai.reports.trajectory import Trajectory

PER_ROW = 3
MAX_CATEGORIES = 20  # boxes per categorical knob: the most often tried values (the figure and page say so)
MAX_LABEL = 14  # characters of a category shown under its box
PAD = 0.08  # of a band's width, left free on each side


@dataclass
class Row:
    """What one row's bands draw, gathered so that each kind of mark is one artist for the whole row."""

    points: list[tuple[float, float]] = field(default_factory=list)
    frame: list[list[tuple[float, float]]] = field(default_factory=list)  # boxes, whiskers, caps
    medians: list[list[tuple[float, float]]] = field(default_factory=list)
    ticks: list[float] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    rotated: list[bool] = field(default_factory=list)


def knob_effects(traj: Trajectory, log_knobs: Sequence[str] = (), ylabel: str = "reward") -> tuple[str, list[str]]:
    """The figure, and one sentence per knob drawn in part (for the page's notes)."""
    knobs = traj.knobs
    ncols = min(PER_ROW, len(knobs))
    rows = [knobs[i : i + ncols] for i in range(0, len(knobs), ncols)]
    fig, axes = _figure(4.0 * ncols, 3.2 * len(rows), len(rows), 1, bottom=0.9)
    scored = traj.scored()
    notes: list[str] = []
    for ax, names in zip(axes, rows, strict=True):
        row = Row()
        for band, knob in enumerate(names):
            pairs = [(s.action.get(knob), s.reward) for s in scored if s.action.get(knob) is not None]
            name = knob
            if knob_kind([v for v, _ in pairs]) == "categorical":
                shown, of = _categorical(row, band, [(str(v), r) for v, r in pairs])
                if shown < of:
                    notes.append(f"{knob}: the {shown} most often tried of its {of} values are drawn.")
            else:
                numeric = [(float(v), r) for v, r in pairs if isinstance(v, int | float) and math.isfinite(v)]
                log = knob in log_knobs and all(v > 0 for v, _ in numeric)
                _numeric(row, band, numeric, log)
                name += " (log scale)" if log else ""
            if len(pairs) > MAX_POINTS:
                notes.append(f"{knob}: an even sample of its {len(pairs)} points is drawn.")
                name += f" (an even sample of {len(pairs)} points)"
            ax.text(band + 0.5, 1.02, name, transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                    fontsize="small" if len(pairs) > MAX_POINTS else "medium")  # fmt: skip
            if band:
                ax.axvline(band, color="lightgray", linewidth=0.8)
        _draw(ax, row, len(names))
        if len(names) < ncols:  # a last, shorter row keeps the bands as wide as the rows above
            box = ax.get_position()
            ax.set_position((box.x0, box.y0, box.width * len(names) / ncols, box.height))
        ax.set_ylabel(ylabel, fontsize="small")
    return _uri(fig), notes


def _draw(ax: Axes, row: Row, bands: int) -> None:
    from matplotlib.collections import LineCollection

    scatter(ax, row.points, s=7, alpha=0.45, color="tab:blue")
    ax.add_collection(LineCollection(row.frame, colors="black", linewidths=1.0))
    ax.add_collection(LineCollection(row.medians, colors="tab:orange", linewidths=1.5))
    ax.set_xticks(row.ticks, row.labels, fontsize="small")
    for label, rotated in zip(ax.get_xticklabels(), row.rotated, strict=True):
        label.set_rotation(30 if rotated else 0)
    ax.set_xlim(0, bands)
    ax.autoscale_view(scalex=False)


def _numeric(row: Row, band: int, pairs: list[tuple[float, float]], log: bool) -> None:
    """A range knob: its values scaled onto the band (by their log when ``log``), ticks at round values."""
    from matplotlib.ticker import LogLocator, MaxNLocator

    if not pairs:
        return
    f = math.log10 if log else float
    lo, hi = min(v for v, _ in pairs), max(v for v, _ in pairs)
    span = f(hi) - f(lo)

    def x(v: float) -> float:
        return band + 0.5 if span == 0 else band + PAD + (f(v) - f(lo)) / span * (1 - 2 * PAD)

    row.points += [(x(v), r) for v, r in even(pairs)]
    locator = LogLocator(numticks=5) if log else MaxNLocator(nbins=4)
    ticks = [float(t) for t in locator.tick_values(lo, hi) if lo <= t <= hi]
    for t in ticks if len(ticks) >= 2 else sorted({lo, hi, *ticks}):  # a range within a decade: its ends too
        row.ticks.append(x(t))
        row.labels.append(f"{t:g}")
        row.rotated.append(False)


def _categorical(row: Row, band: int, pairs: list[tuple[str, float]]) -> tuple[int, int]:
    """Box (quartiles, whiskers at 1.5 IQR, median) + jittered points for the ``MAX_CATEGORIES`` most frequent
    values, spread evenly over the band; returns (values drawn, values there are)."""
    from matplotlib.cbook import boxplot_stats

    groups: dict[str, list[float]] = {}
    for label, reward in pairs:
        groups.setdefault(label, []).append(reward)
    order = sorted(groups, key=lambda g: -len(groups[g]))[:MAX_CATEGORIES]
    if not order:
        return 0, 0
    step = (1 - 2 * PAD) / len(order)
    jitter = random.Random(0)
    for i, box in enumerate(boxplot_stats([groups[g] for g in order])):
        c, half, q1, q3 = band + PAD + (i + 0.5) * step, 0.25 * step, box["q1"], box["q3"]
        row.frame += [[(c - half, q1), (c + half, q1), (c + half, q3), (c - half, q3), (c - half, q1)],
                      [(c, q1), (c, box["whislo"])], [(c, q3), (c, box["whishi"])]]  # fmt: skip
        row.frame += [[(c - half / 2, w), (c + half / 2, w)] for w in (box["whislo"], box["whishi"])]
        row.medians.append([(c - half, box["med"]), (c + half, box["med"])])
        # the box uses every point; the strip beside it an even sample
        row.points += [
            (c + jitter.uniform(-0.3, 0.3) * step, y) for y in even(groups[order[i]], MAX_POINTS // len(order))
        ]
        label = order[i]
        row.ticks.append(c)
        row.labels.append(label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…")
        row.rotated.append(len(order) > 4)
    return len(order), len(groups)
