"""Why a point, or one value, is not of a space: the message a resume or a warm start reports."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from cloudai.space.dims import Categorical, Dimension
from cloudai.space.grid import Space


def point_problem(space: Space, point: Mapping[str, Any]) -> str | None:
    """Why ``point`` is not a point of ``space`` (None when it is)."""
    names = set(space.names)
    unknown, missing = sorted(set(point) - names), sorted(names - set(point))
    if unknown or missing:
        parts = [f"unknown knob(s) {', '.join(unknown)}"] if unknown else []
        parts += [f"missing {', '.join(missing)}"] if missing else []
        return "; ".join(parts) + f" (the knobs are: {', '.join(space.names)})"
    for dim in space.dims:
        why = value_problem(dim, point[dim.name])
        if why:
            return why
    return None


def value_problem(dim: Dimension, value: Any) -> str | None:
    """Why ``value`` is not a value of ``dim`` (None when it is)."""
    if isinstance(dim, Categorical):
        if any(_same(value, c) for c in dim.choices):
            return None
        return f"{dim.name} = {value!r} is not one of {list(dim.choices)}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"{dim.name} = {value!r} is not a number (the range is [{dim.low:g}, {dim.high:g}])"
    if dim.dtype == "int" and value != int(value):
        return f"{dim.name} = {value!r} is not an integer (the range is int)"
    if not dim.low <= value <= dim.high:
        return f"{dim.name} = {value!r} is outside the range [{dim.low:g}, {dim.high:g}]"
    return None


def _same(value: Any, choice: Any) -> bool:
    if isinstance(value, bool) or isinstance(choice, bool):
        return value is choice
    return value == choice
