"""A dimension of a test's space: a categorical list or a numeric range, and its grid.

``Categorical``: a non-empty list of choices. ``Range``: ``{low, high, log, dtype, grid_points}``; it has a grid
only with ``grid_points`` (evenly spaced, log-spaced for a log range), materialised up to ``EAGER_GRID`` points
and computed per index beyond (``_LazyGrid``: a 10^9-point range costs no memory). ``position(value)`` is a
value's index in the grid, O(1) per call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, overload

from cloudai.errors import ConfigError


@dataclass(frozen=True)
class Categorical:
    name: str
    choices: tuple[Any, ...]

    @property
    def grid_values(self) -> tuple[Any, ...]:
        return self.choices

    def position(self, value: Any) -> int:
        return _position(self.choices, value, self._positions)

    @cached_property
    def _positions(self) -> dict[Any, int]:
        return _positions(self.choices)


@dataclass(frozen=True)
class Range:
    name: str
    low: float
    high: float
    log: bool = False
    dtype: Literal["float", "int"] = "float"
    grid_points: int | None = None

    def clip(self, value: float) -> float | int:
        """``value`` clamped into [low, high], rounded for int ranges."""
        value = min(max(value, self.low), self.high)
        return round(value) if self.dtype == "int" else float(value)

    @cached_property
    def grid_values(self) -> Sequence[float | int]:
        """The range's grid: materialised up to ``EAGER_GRID`` points, computed per index beyond (O(1) memory)."""
        if self.grid_points is None:
            raise ConfigError(
                f"range '{self.name}' has no grid_points, so it has no grid",
                field=f"cmd_args.{self.name}",
                hint="add grid_points = N to the range, or use an agent that samples ranges (random_search, optuna)",
            )
        if self.grid_points > EAGER_GRID:
            return _LazyGrid(self)
        return tuple(dict.fromkeys(self._raw(i) for i in range(self.grid_points)))  # int rounding may repeat

    def _raw(self, i: int) -> float | int:
        """The ``i``-th of ``grid_points`` evenly spaced points (log-spaced for a log range), clipped."""
        n = self.grid_points or 1
        if n == 1:
            return self.clip(self.low)
        if self.log:
            a, b = math.log(self.low), math.log(self.high)
            return self.clip(math.exp(a + (b - a) * i / (n - 1)))
        return self.clip(self.low + (self.high - self.low) * i / (n - 1))

    def position(self, value: Any) -> int:
        grid = self.grid_values
        return grid.index(value) if isinstance(grid, _LazyGrid) else _position(grid, value, self._positions)

    @cached_property
    def _positions(self) -> dict[Any, int]:
        return _positions(self.grid_values)


EAGER_GRID = 100_000


def _positions(values: Sequence[Any]) -> dict[Any, int]:
    """Each hashable value's first position: ``grid_index`` is O(dimensions), not O(grid size), per step."""
    found: dict[Any, int] = {}
    for i, value in enumerate(values):
        try:
            found.setdefault(value, i)
        except TypeError:  # an unhashable choice (a list): found by a scan
            continue
    return found


def _position(values: Sequence[Any], value: Any, positions: dict[Any, int]) -> int:
    """``values.index(value)`` (the same answer, the same ``ValueError``), from ``positions`` when it can."""
    try:
        return positions[value]
    except (KeyError, TypeError):
        return values.index(value)


class _LazyGrid(Sequence[float | int]):
    """A huge range grid, one value per index: ``grid_points = 10**9`` costs no memory.

    Float ranges: the ``grid_points`` evenly spaced values. Int ranges: every integer in
    ``[low, high]`` when the points are denser than the integers, else the points rounded
    (strictly increasing then, so no value repeats).
    """

    def __init__(self, dim: Range) -> None:
        self.dim = dim
        n = dim.grid_points or 1
        self.all_ints = dim.dtype == "int" and not dim.log and n - 1 > dim.high - dim.low
        self.first = math.ceil(dim.low)
        self.size = math.floor(dim.high) - self.first + 1 if self.all_ints else n

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> float | int: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[float | int]: ...
    def __getitem__(self, index: int | slice) -> float | int | Sequence[float | int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError(index)
        if self.all_ints:
            return self.first + index
        value = self.dim._raw(index)
        return math.floor(value + 0.5) if self.dim.dtype == "int" else value

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        if self.all_ints:
            guess = int(value) - self.first
        else:
            scale = math.log if self.dim.log else float
            if self.dim.log and value <= 0:
                raise ValueError(f"{value!r} is not on the grid of '{self.dim.name}'")
            span = scale(self.dim.high) - scale(self.dim.low)
            guess = round((scale(value) - scale(self.dim.low)) / span * (self.size - 1))
        for i in (guess, guess - 1, guess + 1):
            if 0 <= i < self.size and self[i] == value:
                return i
        raise ValueError(f"{value!r} is not on the grid of '{self.dim.name}'")

    def __contains__(self, value: object) -> bool:
        try:
            self.index(value)
        except (ValueError, TypeError):
            return False
        return True


Dimension = Categorical | Range
