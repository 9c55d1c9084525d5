"""Whether a point fits an agent's space: ``agent_config.enqueue`` at load, warm-start trials at run.

A point fits when it names exactly the space's dimensions and each value is one of a list's
candidates, or inside a range (an integer for an ``int`` range). ``point_problem`` says what
does not fit, for a message; ``check_enqueue`` turns that into load-time problems (exit 2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from cloudai.config.scenario import RunEntry
from cloudai.errors import Problem
from cloudai.space import Categorical, Dimension, Space


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


def check_enqueue(entry: RunEntry, space: Space, points: list[dict[str, Any]]) -> list[Problem]:
    """Each ``agent_config.enqueue`` point must be a point of the agent's space."""
    field = f"{entry.field_prefix}.agent_config.enqueue"
    problems = []
    for i, point in enumerate(points):
        why = point_problem(space, point)
        if why:
            hint = "give every knob the agent chooses, each a value of its list or range"
            problems.append(Problem(str(entry.scenario_file), f"{field}[{i}]", f"{point!r}: {why}", hint))
    return problems


def _same(value: Any, choice: Any) -> bool:
    if isinstance(value, bool) or isinstance(choice, bool):
        return value is choice
    return value == choice
