"""``parse_space``: each flat knob classified as fixed, categorical or range; every malformed one reported.

A value is a scalar (fixed), a non-empty list (categorical) or a table ``{low, high, log = false, dtype = "float" |
"int", grid_points}`` (a range); ``_parse_range`` says what is wrong with a bad range, in words a user can act on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import Any

from cloudai.errors import ConfigError, Problem
from cloudai.space.dims import Categorical, Dimension, Range
from cloudai.space.grid import Space
from cloudai.space.knobs import is_range

RANGE_KEYS = frozenset({"low", "high", "log", "dtype", "grid_points"})


def parse_space(
    flat: Mapping[str, Any],
    *,
    file: object = None,
    field_of: Callable[[str], str] | None = None,
    whole: Collection[str] = (),
    branches: Mapping[str, Collection[str]] = {},
) -> Space:
    """Classify each flat knob as fixed, categorical or range; every malformed one is reported.

    ``field_of(name)`` gives the TOML path used in error messages (default ``cmd_args.<name>``). A knob named in
    ``whole`` (or under one) is fixed whatever its value: a list there is the value (CloudAI's dse_excluded_args).
    ``branches`` (a workload's ``Workload.branches``): ``{selector: tables}``; when the knobs name the selector,
    each knob under one of those tables applies only where the selector has the table's name (``Space.when``).
    """
    fixed: dict[str, Any] = {}
    dims: list[Dimension] = []
    problems: list[Problem] = []
    for name, value in flat.items():
        where = field_of(name) if field_of else f"cmd_args.{name}"
        try:
            if any(name == w or name.startswith(f"{w}.") for w in whole):
                fixed[name] = value
            elif isinstance(value, list):
                if not value:
                    raise ValueError("empty list: give at least one value, or a scalar")
                dims.append(Categorical(name, tuple(value)))
            elif is_range(value):
                dims.append(_parse_range(name, value))
            else:
                fixed[name] = value
        except ValueError as exc:
            problems.append(Problem(None if file is None else str(file), where, str(exc)))
    if problems:
        raise ConfigError(problems=problems)
    return Space(fixed, tuple(dims), tuple(flat), _branches(flat, branches))


def _branches(flat: Mapping[str, Any], branches: Mapping[str, Collection[str]]) -> dict[str, tuple[str, Any]]:
    """``Space.when`` for the selectors of ``branches`` that ``flat`` names (a file without one: no branches)."""
    return {
        name: (selector, table)
        for selector, tables in branches.items()
        if selector in flat
        for table in tables
        for name in flat
        if name.startswith(f"{table}.")
    }


def _parse_range(name: str, spec: Mapping[str, Any]) -> Range:
    unknown = set(spec) - RANGE_KEYS
    if unknown:
        raise ValueError(f"unknown range key(s) {sorted(unknown)}; a range takes {sorted(RANGE_KEYS)}")
    if "low" not in spec or "high" not in spec:
        raise ValueError("a range needs both low and high")
    low, high = spec["low"], spec["high"]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high)):
        raise ValueError(f"low and high must be numbers, not {low!r} and {high!r}")
    if not all(math.isfinite(v) for v in (low, high)):
        raise ValueError(f"low and high must be finite numbers, not {low!r} and {high!r}")
    if low >= high:
        raise ValueError(f"low ({low}) must be less than high ({high})")
    if not math.isfinite(high - low):  # samplers draw low + u * (high - low)
        raise ValueError(f"the span high - low of [{low}, {high}] overflows a float; narrow the range")
    dtype = spec.get("dtype", "float")
    if dtype not in ("float", "int"):
        raise ValueError(f"dtype must be 'float' or 'int', not {dtype!r}")
    if dtype == "int" and math.ceil(low) > math.floor(high):
        raise ValueError(f"the int range [{low}, {high}] holds no integer; widen it or use dtype = 'float'")
    if dtype == "int" and not (float(low).is_integer() and float(high).is_integer()):
        raise ValueError(f"an int range's low and high must be whole numbers, not {low!r} and {high!r}")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise ValueError("log must be true or false")
    if log and low <= 0:
        raise ValueError("a log range needs low > 0")
    grid_points = spec.get("grid_points")
    if grid_points is not None and (
        not isinstance(grid_points, int) or isinstance(grid_points, bool) or grid_points < 1
    ):
        raise ValueError(f"grid_points must be a positive integer, not {grid_points!r}")
    return Range(name, float(low), float(high), log, dtype, grid_points)
