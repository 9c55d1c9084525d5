"""What the space knows, for a sampler: which lists are ordered, and which points are next to a given one.

Why: a list of numbers (batch sizes 1, 2, 4, ... 256; worker counts 1-4) is an ordered axis, but Optuna's
``CategoricalDistribution`` treats its values as unrelated labels, so TPE learns nothing about 64 from 32 and
128. ``ordinal_values`` says when a list is such an axis (its values sorted: the index is then the axis, so a
list of powers of two is searched on a log scale); local search always moves along it, TPE only with
``agent_config.ordinal`` (see ``cloudai.agents.optuna_agent`` for why that is not the default).

``neighbours`` gives the points one move (or two) away from a point, which the optuna agent's local search
(``agent_config.local_search``) measures around the best points:
TPE finds the good region of a discrete space quickly, then keeps drawing from a wide density around it; the
last few percent are next door (``benchmarks/bench_aiconfigurator.py --section landscape``).

A move changes one knob: an ordered list or an integer range by one position (and, for a range, also by an
eighth of its span, or a factor of two on a log range, so a wide range is crossed in a few moves), an unordered
list to any other value, a float range by a sixteenth of its span (of its log for a log range).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from cloudai.space import Categorical, Dimension, Range, Space

MIN_ORDINAL = 3  # fewer values: no order to learn from, and two values are searched the same either way


def ordinal_values(dim: Dimension) -> tuple[float | int, ...] | None:
    """The list's values sorted, when they are distinct numbers (not booleans), at least ``MIN_ORDINAL``."""
    if not isinstance(dim, Categorical) or len(dim.choices) < MIN_ORDINAL:
        return None
    if not all(isinstance(c, int | float) and not isinstance(c, bool) and math.isfinite(c) for c in dim.choices):
        return None
    values = tuple(sorted(dim.choices))
    return values if len(set(values)) == len(values) else None


def neighbours(space: Space, point: Mapping[str, Any], knobs: int = 1) -> list[dict[str, Any]]:
    """The points one move from ``point`` in each of ``knobs`` (1 or 2) knobs at once (see the module docstring),
    each once, ``point`` excluded. Two knobs reach what no single move does: more prefill workers *and* fewer
    decode workers keep a disaggregated deployment's ratio, where either move alone is worse."""
    found: dict[str, dict[str, Any]] = {}
    off = space.inactive(point)  # a knob of a branch not chosen: moving it moves nothing (``Space.when``)
    for dims in itertools.combinations([d for d in space.dims if d.name not in off], knobs):
        options = [[v for v in _moves(dim, point[dim.name]) if v != point[dim.name]] for dim in dims]
        for values in itertools.product(*options):
            moved = space.canonical({**point, **{dim.name: value for dim, value in zip(dims, values, strict=True)}})
            found.setdefault(repr(sorted(moved.items(), key=lambda kv: kv[0])), moved)
    return list(found.values())


def _moves(dim: Dimension, value: Any) -> list[Any]:
    if isinstance(dim, Categorical):
        ordered = ordinal_values(dim)
        if ordered is None:
            return list(dim.choices)
        at = ordered.index(value)
        return [ordered[i] for i in (at - 1, at + 1) if 0 <= i < len(ordered)]
    return _range_moves(dim, float(value))


def _range_moves(dim: Range, value: float) -> list[float | int]:
    if dim.dtype == "int":
        if dim.log and value > 0:
            steps = [value - 1, value + 1, value / 2, value * 2]
        else:
            wide = max(1.0, round((dim.high - dim.low) / 8))
            steps = [value - 1, value + 1, value - wide, value + wide]
        return [dim.clip(v) for v in steps]
    if dim.log and value > 0 and dim.low > 0:
        factor = (dim.high / dim.low) ** (1 / 16)
        return [dim.clip(value / factor), dim.clip(value * factor)]
    step = (dim.high - dim.low) / 16
    return [dim.clip(value - step), dim.clip(value + step)]
