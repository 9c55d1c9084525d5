"""Which points a chart draws: all of them when there are few, a bounded subset that keeps the shape otherwise.

The points a chart draws are embedded in the page (``chartdata``), and drawing them is what grows with a run's
length, so every series a chart draws goes through here and the page's size and cost stay bounded at any N.
The subsets, and what the page says about them:

- ``envelope``: for a series against step, the lowest and the highest point of each of ``limit // 4``
  consecutive bins (the outline of the cloud, outliers included) and an even sample of its inside;
- ``even``: every k-th item, for clouds with no order to keep (reward against a knob's value);
- ``changes``: a step function (best so far) reduced to the points where it changes: exact, no note needed.

Pure Python on lists: ``import cloudai.reports`` stays free of numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
# At most this many markers per series: an even sample or an envelope of a longer one is drawn, and the
# chart (its title) and the page (a note) say so.
MAX_POINTS = 1500


def even(items: list[T], limit: int = MAX_POINTS) -> list[T]:
    """Every k-th item, at most ``limit`` of them (all when there are few)."""
    return items if len(items) <= limit else items[:: -(-len(items) // limit)]


def envelope(points: list[tuple[float, float]], limit: int = MAX_POINTS) -> list[tuple[float, float]]:
    """At most ``limit`` of ``points`` (in x order), in x order: of each of ``limit // 4`` consecutive bins of
    (nearly) equal size its lowest and highest point (by y), and an even sample (every k-th point) for the inside
    of the cloud, which the extremes alone would leave empty. All points when there are at most ``limit``."""
    return [points[i] for i in envelope_index([y for _, y in points], limit)]


def envelope_index(ys: Sequence[float], limit: int = MAX_POINTS) -> list[int]:
    """``envelope`` of the points ``(i, ys[i])``, as the indices it keeps (ascending)."""
    if len(ys) <= limit:
        return list(range(len(ys)))
    bins = max(1, limit // 4)
    keep = set(range(0, len(ys), -(-len(ys) // max(1, limit - 2 * bins))))
    for b in range(bins):
        lo = len(ys) * b // bins
        part = ys[lo : len(ys) * (b + 1) // bins]  # the bin's first lowest and first highest, found in C:
        keep.add(lo + part.index(min(part)))  # min and max keep the first of equal values, index finds the first
        keep.add(lo + part.index(max(part)))
    return sorted(keep)


def changes(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    """A step function (``where="post"``) with only the points where ``y`` changes, plus the last: the same line."""
    keep = change_index(ys)
    return [xs[i] for i in keep], [ys[i] for i in keep]


def change_index(ys: Sequence[float]) -> list[int]:
    """The indices ``changes`` keeps: the first, each where ``y`` differs from the one before, the last."""
    return [i for i in range(len(ys)) if i == 0 or i == len(ys) - 1 or not _same(ys[i], ys[i - 1])]


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def envelope_note(series: int, limit: int = MAX_POINTS) -> str:
    """What a chart against step says when some series has more than ``limit`` points (else "")."""
    if series <= limit:
        return ""
    return (
        f"Plots against step draw at most {limit} points per status: a longer series is drawn as the lowest "
        f"and highest point of each of {limit // 4} step bins (its outline) and an even sample of the rest "
        "(every step is in trajectory.csv)."
    )
