"""``Space``: a test's fixed values plus its dimensions, and the numbering of its grid.

Grid points are numbered in mixed radix (the last dimension varies fastest), so ``grid_point(i)``/``grid_index(p)``
cost O(dimensions) and a 10^9-point grid costs nothing until asked.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from cloudai.space.dims import Categorical, Dimension


@dataclass(frozen=True)
class Space:
    """Fixed values plus dimensions, by flat name. Points are ``{name: value}`` for dimensions."""

    fixed: Mapping[str, Any] = field(default_factory=dict)
    dims: tuple[Dimension, ...] = ()
    order: tuple[str, ...] = ()  # every knob's name in the order the TOML gave them (``full`` keeps it)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    def dim(self, name: str) -> Dimension:
        return next(d for d in self.dims if d.name == name)

    @cached_property
    def grid_size(self) -> int:
        return math.prod(len(d.grid_values) for d in self.dims)

    @property
    def has_grid(self) -> bool:
        return all(isinstance(d, Categorical) or d.grid_points for d in self.dims)

    def grid_point(self, index: int) -> dict[str, Any]:
        if not 0 <= index < self.grid_size:
            raise IndexError(f"grid index {index} outside [0, {self.grid_size})")
        point: dict[str, Any] = {}
        for dim in reversed(self.dims):
            values = dim.grid_values
            index, rem = divmod(index, len(values))
            point[dim.name] = values[rem]
        return {name: point[name] for name in self.names}

    def grid_index(self, point: Mapping[str, Any]) -> int:
        index = 0
        for dim in self.dims:
            index = index * len(dim.grid_values) + dim.position(point[dim.name])
        return index

    def iter_grid(self, start: int = 0) -> Iterator[dict[str, Any]]:
        for index in range(start, self.grid_size):
            yield self.grid_point(index)

    def without(self, names: set[str]) -> Space:
        """The space with the named dimensions removed (e.g. env_params the environment samples)."""
        return Space(self.fixed, tuple(d for d in self.dims if d.name not in names), self.order)

    def full(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """Every knob's value for one trial: fixed values with ``point`` on top (flat names).

        Knobs come in the TOML's order, swept or not: a tool may read its options in order (fio's
        ``--name`` starts a job; the options before it are global), and best.toml reads like the input.
        """
        values = {**self.fixed, **point}
        if not self.order:
            return values
        rank = self._rank
        return dict(sorted(values.items(), key=lambda item: rank.get(item[0], len(rank))))

    @cached_property
    def _rank(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.order)}
