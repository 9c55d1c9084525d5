"""The Pareto front of measured trials: pure functions over (values, directions), shared by run and report.

A point dominates another when it is at least as good in every objective and better in one
("max": larger is better, "min": smaller). The front is the set no point dominates. Only
finite values take part (a failed trial measured nothing). Points are sorted by the first
objective (best first), then a sweep keeps those the kept ones do not dominate: O(n log n +
n * front).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def dominates(a: Sequence[float], b: Sequence[float], directions: Sequence[str]) -> bool:
    better = False
    for x, y, d in zip(a, b, directions, strict=True):
        if d == "min":
            x, y = -x, -y
        if x < y:
            return False
        better = better or x > y
    return better


def pareto_indices(points: Sequence[Sequence[float]], directions: Sequence[str]) -> list[int]:
    """Indices of the non-dominated finite points, in input order (equal points all stay)."""
    sign = [-1.0 if d == "min" else 1.0 for d in directions]
    finite = [i for i, p in enumerate(points) if all(math.isfinite(v) for v in p)]
    order = sorted(finite, key=lambda i: tuple(-s * v for s, v in zip(sign, points[i], strict=True)))
    front: list[int] = []
    for i in order:
        if not any(dominates(points[j], points[i], directions) for j in front):
            front.append(i)
    return sorted(front)
