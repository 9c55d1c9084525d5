"""``Space``: a test's fixed values plus its dimensions, and the numbering of its grid.

Grid points are numbered in mixed radix (the last dimension varies fastest), so ``grid_point(i)``/``grid_index(p)``
cost O(dimensions) and a 10^9-point grid costs nothing until asked.

Branches (a conditional space). ``when`` maps a knob to ``(selector, value)``: the knob applies only where the
selector knob has that value (Aiconfigurator's ``mode = ["agg", "disagg"]`` with both ``[cmd_args.agg]`` and
``[cmd_args.disagg]``: ``agg.tp`` applies where ``mode = "agg"``). A knob of a branch not chosen is *inactive*:
``full`` leaves it out (the job, the rule and best.toml see the chosen branch alone) and ``canonical`` pins it to
its dimension's first value, so two points that differ only there are one point (one cache entry, one trajectory
action, one grid point: ``is_canonical``). Points keep every dimension, so a sampler that knows nothing of branches
still draws valid points; the env canonicalises each one before it is a step.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from cloudai.space.dims import Categorical, Dimension, Range


@dataclass(frozen=True)
class Space:
    """Fixed values plus dimensions, by flat name. Points are ``{name: value}`` for dimensions."""

    fixed: Mapping[str, Any] = field(default_factory=dict)
    dims: tuple[Dimension, ...] = ()
    order: tuple[str, ...] = ()  # every knob's name in the order the TOML gave them (``full`` keeps it)
    when: Mapping[str, tuple[str, Any]] = field(default_factory=dict)  # knob -> (selector, value): its branch

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    def dim(self, name: str) -> Dimension:
        return self._dims[name]

    @cached_property
    def _dims(self) -> dict[str, Dimension]:
        return {d.name: d for d in self.dims}

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
        return Space(self.fixed, tuple(d for d in self.dims if d.name not in names), self.order, self.when)

    def inactive(self, values: Mapping[str, Any]) -> set[str]:
        """The knobs of a branch not chosen by ``values`` (a point, or a point's full values; fixed values
        fill in a selector the point lacks)."""
        if not self.when:
            return set()
        merged = {**self.fixed, **values}
        return {name for name, (selector, value) in self.when.items() if merged.get(selector) != value}

    def canonical(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """``point`` with each inactive dimension at its first value (``first_value``): one point per distinct
        configuration. A space without branches returns the point unchanged (a copy)."""
        if not self.when:  # every step asks: no set to build
            return dict(point)
        off = self.inactive(point) & set(self._dims)
        return {name: first_value(self._dims[name]) if name in off else value for name, value in point.items()}

    def active(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """``point`` without its inactive knobs: how a message or a listing shows it."""
        off = self.inactive(point)
        return {name: value for name, value in point.items() if name not in off}

    def is_canonical(self, point: Mapping[str, Any]) -> bool:
        return self.canonical(point) == dict(point)

    def full(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """Every knob's value for one trial: fixed values with ``point`` on top (flat names).

        Knobs come in the TOML's order, swept or not: a tool may read its options in order (fio's
        ``--name`` starts a job; the options before it are global), and best.toml reads like the input.
        Inactive knobs (a branch not chosen, see the module docstring) are left out.
        """
        values = {**self.fixed, **point}
        if self.when:
            off = self.inactive(values)
            values = {name: value for name, value in values.items() if name not in off}
        if not self.order:
            return values
        # The TOML's order (``parse_space`` gives each name once), then the names it lacks as they came: what a
        # stable sort by rank gives, without a key call per knob per trial.
        ordered = {name: values[name] for name in self.order if name in values}
        if len(ordered) < len(values):
            ordered |= {name: value for name, value in values.items() if name not in ordered}
        return ordered


def first_value(dim: Dimension) -> Any:
    """What an inactive dimension is pinned to: a list's first candidate, a range's first grid value (its low
    end, rounded for an int range, when it has no grid)."""
    if isinstance(dim, Range) and dim.grid_points is None:
        return dim.clip(dim.low)
    return dim.grid_values[0]
