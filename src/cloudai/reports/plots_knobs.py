"""Reward against each knob's value, one small chart per knob, three to a row: box + strip for a categorical
knob, a scatter for a range (log x for ``log = true``). Same conventions as ``plots`` (specs for
``static/report.js``; a point is a row of the agent run's table, so hovering it shows its whole configuration).
"""

from __future__ import annotations

import itertools
import math
import random
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from cloudai.reports.analysis import knob_kind
from cloudai.reports.plots import PAGE_WIDTH, Spec, spec
from cloudai.reports.thin import MAX_POINTS, even

if TYPE_CHECKING:
    from cloudai.reports.chartdata import Rows
    from cloudai.reports.trajectory import Step, Trajectory

PER_ROW = 3
MAX_CATEGORIES = 20  # boxes per categorical knob: the most often tried values (the chart and page say so)
MAX_LABEL = 14  # characters of a category shown under its box
JITTER = 0.3  # a strip point's offset from its box's centre, at most, in categories
HALF = 0.25  # a box's half width, in categories
POINTS = "rgba(31,119,180,0.45)"
SORT_IN_C = 512  # values in a box from which numpy sorts them
Box = tuple[float, float, float, float, float, float, float]  # x, half width, q1, q3, median, low and high whisker


def knob_effects(
    rows: Rows, traj: Trajectory, log_knobs: Sequence[str] = (), ylabel: str = "reward"
) -> tuple[list[Spec], list[str]]:
    """One chart per knob, and one sentence per knob drawn in part (for the page's notes)."""
    scored = traj.scored()
    charts: list[Spec] = []
    notes: list[str] = []
    actions = list(map(attrgetter("action"), scored))
    for j, knob in enumerate(traj.knobs):
        steps, values = _set(scored, actions, knob)
        name = knob
        if knob_kind(values) == "categorical":
            chart, shown, of = categorical(rows, steps, list(map(str, values)))
            if shown < of:
                notes.append(f"{knob}: the {shown} most often tried of its {of} values are drawn.")
        else:  # numbers only (knob_kind): the finite ones are drawn
            if all(map(math.isfinite, values)):  # nearly always: no list of positions
                drawn, log = steps, knob in log_knobs and min(values, default=1) > 0
            else:
                finite = [i for i, v in enumerate(values) if math.isfinite(v)]
                drawn, log = [steps[i] for i in finite], knob in log_knobs and all(values[i] > 0 for i in finite)
            chart = numeric(rows, drawn, f"knob:{j}", log)
            name += " (log scale)" if log else ""
        if len(steps) > MAX_POINTS:
            notes.append(f"{knob}: an even sample of its {len(steps)} points is drawn.")
            name += f" (an even sample of {len(steps)} points)"
        charts.append(chart | {"title": name, "xlabel": knob, "ylabel": ylabel})
    return charts, notes


def _set(steps: list[Step], actions: list[dict[str, object]], knob: str) -> tuple[list[Step], list]:
    """The steps that set ``knob``, and its value in each (``actions``: the steps' own; one pass, no pair per
    step: 10^5 steps a knob)."""
    values = list(map(dict.get, actions, itertools.repeat(knob)))
    if None not in values:
        return steps, values
    kept = [i for i, v in enumerate(values) if v is not None]
    return [steps[i] for i in kept], [values[i] for i in kept]


def _small(rows: Rows, series: list[Spec], **layout: object) -> Spec:
    return spec(rows, series, "", "", width=PAGE_WIDTH // PER_ROW - 14, height=280) | layout


def numeric(rows: Rows, steps: list[Step], column: str, log: bool) -> Spec:
    """A range knob: reward against its value (the table's ``column``), an even sample of a long run."""
    series = {"label": "trials", "color": POINTS, "size": 4, "x": column, "y": "reward", "rows": rows.refs(even(steps))}
    return _small(rows, [series], xlog=log)


def categorical(rows: Rows, steps: list[Step], labels: list[str]) -> tuple[Spec, int, int]:
    """Box (quartiles, whiskers at 1.5 IQR, median) + jittered points for the ``MAX_CATEGORIES`` most frequent
    values (``labels``: each step's), at x = 0, 1, ...; returns the chart, the values drawn and the values there
    are."""
    groups = _positions(labels)  # label -> positions in ``steps``
    order = sorted(groups, key=lambda g: -len(groups[g]))[:MAX_CATEGORIES]
    all_rewards = list(map(attrgetter("reward"), steps))
    jitter = random.Random(0)
    drawn: list[Step] = []
    xs: list[float] = []
    boxes: list[Box] = []
    ticks: list[tuple[float, str, bool]] = []
    for i, label in enumerate(order):
        rewards = list(map(all_rewards.__getitem__, groups[label]))
        if not all(map(math.isfinite, rewards)):
            rewards = [r for r in rewards if math.isfinite(r)]  # an infinite one has no place
        if rewards:
            boxes.append((i, HALF, *box_stats(rewards)))
        # the box uses every point; the strip an even sample
        strip = list(map(steps.__getitem__, even(groups[label], MAX_POINTS // len(order))))
        drawn += strip
        xs += [i + jitter.uniform(-JITTER, JITTER) for _ in strip]
        ticks.append((i, label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…", len(order) > 4))
    series = {"label": "trials", "color": POINTS, "size": 4, "xs": xs, "y": "reward", "rows": rows.refs(drawn)}
    chart = _small(rows, [series], xrange=[-0.5, max(len(order), 1) - 0.5], ticks=ticks, boxes=boxes)
    return chart, len(order), len(groups)


def _positions(labels: list[str]) -> dict[str, list[int]]:
    """Each label's positions in ``labels``, labels in order of first appearance: one stable sort of their codes
    (numpy) rather than a pass over the column per label (a knob of 8 values over 10^5 steps: 8 passes)."""
    import numpy as np  # only for a page with knobs: a plain run's report imports no numpy

    distinct = list(dict.fromkeys(labels))
    code = dict(zip(distinct, range(len(distinct)), strict=True))
    codes = np.fromiter(map(code.__getitem__, labels), np.intp, len(labels))
    order: list[int] = np.argsort(codes, kind="stable").tolist()
    ends: list[int] = np.cumsum(np.bincount(codes, minlength=len(distinct))).tolist()
    return {label: order[start:end] for label, start, end in zip(distinct, [0, *ends], ends, strict=False)}


def box_stats(values: list[float]) -> tuple[float, float, float, float, float]:
    """q1, q3, median (linear interpolation between ranks, as numpy's percentile), and the whiskers: the most
    extreme values within 1.5 IQR of the quartiles (Tukey's; matplotlib's boxplot default). A long list of floats
    is sorted by numpy (stable, as ``sorted``: -0.0 and 0.0 keep their order), ~10x faster."""
    ordered = sorted(values) if len(values) < SORT_IN_C or set(map(type, values)) != {float} else _sorted(values)
    q1, med, q3 = (_quantile(ordered, q) for q in (0.25, 0.5, 0.75))
    reach = 1.5 * (q3 - q1)
    low = ordered[bisect_left(ordered, q1 - reach)]  # the quartiles lie within the values: both exist
    high = ordered[bisect_right(ordered, q3 + reach) - 1]
    return q1, q3, med, min(low, q1), max(high, q3)


def _sorted(values: list[float]) -> list[float]:
    import numpy as np

    return np.sort(np.array(values, dtype=np.float64), kind="stable").tolist()


def _quantile(ordered: list[float], q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
