"""The valid points of a test's space under its workload's rule: the one place that counts, walks and explains them.

A workload's rule (``Workload.constraint``) shapes the search before any trial: a grid skips the points that break
it, a sampler redraws them, a space without a valid point is refused at load time. ``ValidPoints`` answers every
such question for one space on one system (its GPUs per node):

* ``violation(point, env)``: why one point breaks the rule (the scalar ``constraint``), or None;
* ``mask(start, stop)``: which grid indices in ``[start, stop)`` are valid, as a bool array;
* ``count()``, ``next_valid(index)``, ``first(n)``, ``example()``: built on ``mask``.

Speed. A per-point Python call costs tens of microseconds here (the point is assembled, split and nested first),
so a 10^6-point grid asked point by point takes tens of seconds. A workload may give the same rule vectorised
(``Workload.constraint_mask(columns, resources)``, elementwise numpy only: the columns are *broadcastable*
arrays, not necessarily of equal length):

* ``count`` evaluates it once per block of up to ``BLOCK`` points with each knob an array along its own axis
  (``np.ix_``-style), so ``tp * pp * cp`` is computed over the product of those three knobs alone and the result
  broadcast: 10^6 points in about 10 ms;
* a walk (``mask``, ``next_valid``) evaluates ``CHUNK`` consecutive grid indices, each knob's column taken from
  its values at ``(index // stride) % size`` (the grid's mixed radix).

Without it the scalar rule is asked per point, and ``count`` gives up (None) beyond ``SCALAR_LIMIT`` points rather
than stall a dry-run. A workload without a rule costs nothing: every point is valid.

Learned bounds (``bound``): a measured point that broke an upper bound on a metric the workload says is
monotone (``Workload.monotone``: a serving latency grows with the batch) rules out every point past it, the same
way in ``violation`` and in the vectorised mask; a grid's ``count`` leaves them out (an upper bound).

Env params: the walked space may lack the knobs the environment samples (``env_names``); a point is then judged
with the values drawn for its step (``violation(point, env)``) and the grid helpers fall back to "valid" for
points whose rule needs them (the step's own check still refuses them).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from cloudai.space import NUM_NODES, Categorical, Space, first_value
from cloudai.workloads.base import Monotone, ResourceColumns, Workload, constraint_of

CHUNK = 1 << 16  # grid indices per vectorised evaluation of a walk
SCALAR_CHUNK = 1 << 8  # ... per scalar one (tens of microseconds a point: a walk's step stays in milliseconds)
BLOCK = 1 << 22  # grid points per broadcast evaluation of a count
SCALAR_LIMIT = 20_000  # points the scalar rule is asked for by count() (~1 s) before it gives up


class ValidPoints:
    """``workload``'s rule over ``space`` (grid indices are ``space``'s) on a system with ``gpus_per_node``."""

    def __init__(
        self,
        space: Space,
        workload: Workload,
        gpus_per_node: int | None,
        env_names: frozenset[str] = frozenset(),
        *,
        nodes_set: bool = True,
    ) -> None:
        """``nodes_set``: the entry sets ``num_nodes`` (else the job gets ``workload.num_nodes(args)``)."""
        self.space, self.workload, self.gpus_per_node, self.nodes_set = space, workload, gpus_per_node, nodes_set
        self.has_rule = type(workload).constraint is not Workload.constraint
        self.env_names = env_names
        self.vectorised = self.has_rule and type(workload).constraint_mask is not Workload.constraint_mask
        self._chunk: tuple[int, np.ndarray] | None = None  # the last chunk's mask (a walk asks neighbours)
        self._count: int | None = None
        self._bounds: list[tuple[dict[str, Any], Monotone, str]] = []  # learned (``bound``): point, how, why
        self._bound_points: dict[Monotone, list[dict[str, Any]]] = {}  # the same points by how (lists only grow)

    def bound(self, values: Mapping[str, Any], monotone: Monotone, reason: str) -> None:
        """Rule out every point past ``values`` (a measured point's flat knobs, fixed ones included) by
        ``monotone``: its ``grows`` knobs no smaller, its ``free`` knobs anything, the rest equal. ``reason``: what
        ``violation`` says of them. For a point that broke an upper bound on a metric ``monotone`` describes."""
        self._bounds.append((dict(values), monotone, reason))
        self._bound_points.setdefault(monotone, []).append(self._bounds[-1][0])
        self._chunk = None

    def point_values(self, point: Mapping[str, Any], env: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every knob of ``point`` as the vectorised rule sees it: fixed ones, each dimension (a branch not chosen at
        its first value, ``Space.canonical``), the step's ``env``."""
        return {**self.space.fixed, **self.space.canonical(dict(point)), **(env or {})}

    def _past_bound(self, columns: Mapping[str, Any]) -> tuple[np.ndarray, str | None]:
        """Where the points of ``columns`` (flat names: arrays, or one point's values) lie past a learned bound,
        and the first such bound's reason for a single point."""
        out, why = np.asarray(False), None
        for monotone, points in self._bound_points.items():
            skip = monotone.free | ({NUM_NODES} if NUM_NODES not in points[0] else set())
            hit = past_points(columns, points, monotone.grows, frozenset(skip))
            out = out | hit
        if out.ndim == 0 and bool(out):
            why = next(reason for point, monotone, reason in self._bounds
                       if bool(past_points(columns, [point], monotone.grows, monotone.free | {NUM_NODES})))  # fmt: skip
        return out, why

    def violation(self, point: Mapping[str, Any], env: Mapping[str, Any] | None = None) -> str | None:
        """Why ``point`` (with the step's sampled ``env``) breaks the rule; None when it is valid."""
        if not self.has_rule:
            return None
        values = self.space.full({**point, **(env or {})})
        if self._bounds and (why := self._past_bound(self.point_values(point, env))[1]) is not None:
            return why
        return constraint_of(self.workload, values, self.gpus_per_node, nodes_set=self.nodes_set)

    def mask(self, start: int, stop: int) -> np.ndarray:
        """Valid (True) or not for each grid index in ``[start, stop)``."""
        stop = min(stop, self.space.grid_size)
        if not self.has_rule or self.env_names:
            return np.ones(max(0, stop - start), dtype=bool)
        if self.vectorised:
            got = self._vector_mask(self.columns(start, stop), stop - start)
            if got is not None:
                return got
        points = (self.space.grid_point(i) for i in range(start, stop))
        return np.fromiter((self.space.is_canonical(p) and self.violation(p) is None for p in points), bool)

    def _canonical(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Where the grid point is its own canonical form (``Space.canonical``): a knob of a branch not chosen at
        its first value. The other grid points repeat one of those, so a walk skips them and a count leaves them
        out (``Space.when``; a space without branches: True)."""
        out = np.asarray(True)
        for name, (selector, value) in self.space.when.items():
            if name in self._values and selector in columns:
                first = first_value(self.space.dim(name))
                out = out & ((np.asarray(columns[selector]) == value) | (np.asarray(columns[name]) == first))
        return out

    def mask_at(self, positions: Mapping[str, np.ndarray]) -> np.ndarray | None:
        """Valid (True) or not for each point given by its position in every dimension's grid values (arrays of
        equal length, one per dimension): a sampler's candidates judged at once. None when only the scalar rule
        could tell (no vectorised rule, env params, a dimension missing)."""
        if not self.has_rule or self.env_names or not self.vectorised:
            return self.mask_values(positions)  # all valid, or None: the positions need no values
        if any(d.name not in positions or d.name not in self._values for d in self.space.dims):
            return None
        return self.mask_values({d.name: self._values[d.name][positions[d.name]] for d in self.space.dims})

    def _vector_mask(self, columns: dict[str, np.ndarray], size: int) -> np.ndarray | None:
        nodes = np.asarray(columns[NUM_NODES], dtype=np.int64)
        got = self.workload.constraint_mask(columns, ResourceColumns(nodes, self.gpus_per_node))
        if got is None:
            return None
        got = np.asarray(got, dtype=bool) & self._canonical(columns)
        if self._bounds:
            got = got & ~self._past_bound(columns)[0]
        return np.broadcast_to(got, (size,))  # a rule of fixed knobs: 0-d

    def columns(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """Every knob's values over the grid indices ``[start, stop)``: dimensions by mixed radix, fixed ones
        repeated (numbers as numeric arrays, anything else as an object array)."""
        index = np.arange(start, stop, dtype=np.int64)
        positions: dict[str, np.ndarray] = {}
        stride = 1
        for dim in reversed(self.space.dims):
            size = len(dim.grid_values)
            positions[dim.name] = (index // stride) % size
            stride *= size
        return self._columns_at(positions, stop - start)

    def mask_values(self, values: Mapping[str, np.ndarray]) -> np.ndarray | None:
        """``mask_at`` given each dimension's values (arrays of equal length: a list's from ``grid_array``, a
        range's as drawn) instead of grid positions: a sampler's candidates over ranges too."""
        if not self.has_rule or self.env_names or not self.vectorised:
            return None if self.has_rule else np.ones(len(next(iter(values.values()), ())), dtype=bool)
        if any(d.name not in values for d in self.space.dims):
            return None
        size = len(next(iter(values.values()), ()))
        return self._vector_mask(self._with_fixed({name: np.asarray(v) for name, v in values.items()}, size), size)

    def grid_array(self, name: str) -> np.ndarray:
        """Dimension ``name``'s grid values as an array (a list's values, in order)."""
        return self._values[name]

    def _columns_at(self, positions: Mapping[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
        """The columns of the ``size`` points at ``positions`` (each dimension's grid positions)."""
        columns: dict[str, np.ndarray] = {}
        for dim in reversed(self.space.dims):
            at = positions[dim.name]
            if dim.name in self._values:
                columns[dim.name] = self._values[dim.name][at]
            else:  # a huge lazy range grid: only the values this chunk needs
                columns[dim.name] = _array([dim.grid_values[int(p)] for p in at])
        return self._with_fixed(columns, size)

    def _with_fixed(self, columns: dict[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
        """``columns`` with the space's fixed knobs (and one node unless set) for ``size`` points."""
        for name, value in self.space.fixed.items():
            columns[name] = np.broadcast_to(_array([value]), (size,))
        columns.setdefault(NUM_NODES, np.ones(size, dtype=np.int64))
        return columns

    @cached_property
    def _values(self) -> dict[str, np.ndarray]:
        """Each dimension's grid values as an array (ranges without a grid or of more than ``BLOCK`` points are left
        out)."""
        gridded = [d for d in self.space.dims if isinstance(d, Categorical) or d.grid_points is not None]
        return {d.name: _array(list(d.grid_values)) for d in gridded if len(d.grid_values) <= BLOCK}

    def is_valid(self, index: int) -> bool:
        """One grid index (from the walk's cached chunk when it holds it: random access costs one evaluation)."""
        if self._chunk is not None and 0 <= index - self._chunk[0] < len(self._chunk[1]):
            return bool(self._chunk[1][index - self._chunk[0]])
        return bool(self.mask(index, index + 1)[0])

    def next_valid(self, index: int, stop: int | None = None) -> int | None:
        """The first valid grid index at or after ``index`` (and before ``stop``); None when there is none."""
        size, step = self.space.grid_size, CHUNK if self.vectorised else SCALAR_CHUNK
        size = size if stop is None else min(size, stop)
        while index < size:
            chunk = index - index % step
            if self._chunk is None or self._chunk[0] != chunk:
                self._chunk = (chunk, self.mask(chunk, chunk + step))
            found = np.flatnonzero(self._chunk[1][index - chunk :])
            if found.size:
                return index + int(found[0]) if index + int(found[0]) < size else None
            index = chunk + step
        return None

    def count(self) -> int | None:
        """How many grid points are valid; None when only the scalar rule can tell and the grid is too big."""
        if self._count is None and self.space.when and self.has_rule and not self.env_names:
            self._count = self._count_branches()
        size = self.space.grid_size
        if not self.has_rule or self.env_names:
            return size
        if self._count is None and self.vectorised and len(self._values) == len(self.space.dims):
            self._count = self._count_block(())  # None: the mask declined these columns
        if self._count is None and (self.vectorised or size <= SCALAR_LIMIT):
            self._count = sum(int(self.mask(s, s + CHUNK).sum()) for s in range(0, size, CHUNK))
        return self._count

    def _count_branches(self) -> int | None:
        """``count`` of a space with branches (``Space.when``), branch by branch: each branch's grid has its own
        knobs and the others pinned to their first value, so the count costs the branches' sizes added, not the
        product of every knob (two modes of 10^3 and 10^6 points: 10^6, not 10^9)."""
        space, total = self.space, 0
        selectors = {selector for selector, _ in space.when.values()}
        choices = [
            [(name, value) for value in space.dim(name).grid_values] if name in space.names else [(name, None)]
            for name in sorted(selectors)
        ]
        for branch in itertools.product(*choices):
            chosen = {name: value for name, value in branch if value is not None}
            off = space.inactive(chosen)
            dims = tuple(
                Categorical(d.name, (chosen[d.name],)) if d.name in chosen
                else Categorical(d.name, (first_value(d),)) if d.name in off
                else d
                for d in space.dims
            )  # fmt: skip
            sub = ValidPoints(Space(space.fixed, dims, space.order), self.workload, self.gpus_per_node,
                              nodes_set=self.nodes_set)  # fmt: skip
            found = sub.count()
            if found is None:
                return None
            total += found
        return total

    def _count_block(self, prefix: tuple[int, ...]) -> int | None:
        """Valid points whose leading dimensions sit at ``prefix`` (positions): the rule evaluated once over the
        rest of the grid as broadcast columns (each knob an array along its own axis), so a rule reading only
        some knobs computes over their product alone; a block over ``BLOCK`` points is split on its next axis."""
        dims, k = self.space.dims, len(prefix)
        sizes = [len(self._values[d.name]) for d in dims]
        if math.prod(sizes[k:]) > BLOCK and k < len(dims):
            counts = [self._count_block((*prefix, j)) for j in range(sizes[k])]
            return None if None in counts else sum(c for c in counts if c is not None)
        shape = (1,) * k + tuple(sizes[k:])
        columns: dict[str, np.ndarray] = {}
        for axis, dim in enumerate(dims):
            values = self._values[dim.name]
            values = values[prefix[axis] : prefix[axis] + 1] if axis < k else values
            columns[dim.name] = values.reshape([-1 if a == axis else 1 for a in range(len(dims))])
        for name, value in self.space.fixed.items():
            columns[name] = _array([value]).reshape(())
        columns.setdefault(NUM_NODES, np.asarray(1, dtype=np.int64))
        nodes = np.asarray(columns[NUM_NODES], dtype=np.int64)
        got = self.workload.constraint_mask(columns, ResourceColumns(nodes, self.gpus_per_node))
        if got is None:
            return None
        return int(np.broadcast_to(np.asarray(got, dtype=bool) & self._canonical(columns), shape).sum())

    def first(self, n: int) -> list[int]:
        """The first ``n`` valid grid indices (fewer when the grid has fewer)."""
        found: list[int] = []
        index = self.next_valid(0)
        while index is not None and len(found) < n:
            found.append(index)
            index = self.next_valid(index + 1)
        return found

    def example(self) -> tuple[dict[str, Any], str] | None:
        """The first grid point and why it breaks the rule (for a message); None when it is valid."""
        point = self.space.grid_point(0) if self.space.grid_size else {}
        why = self.violation(point)
        return None if why is None else (point, why)

    def summary(self) -> str:
        """``"192 points, 61 valid"`` (the valid count left out when it cannot be counted cheaply)."""
        size, valid = self.space.grid_size, self.count()
        if not self.has_rule:
            return f"{size} points"
        return f"{size} points, {valid} valid" if valid is not None else f"{size} points (validity checked per step)"


def past_points(
    columns: Mapping[str, Any], points: Sequence[Mapping[str, Any]], grows: frozenset[str], skip: frozenset[str]
) -> np.ndarray:
    """Where the points of ``columns`` (flat names: 1-d arrays of one length, or one point's values) lie past one of
    ``points``: every column but ``skip`` equal to the recorded value, those of ``grows`` no smaller. A recorded
    point that lacks one of those names is past by none. Vectorised over the recorded points too (a run's rule
    may hold hundreds, asked for thousands of candidates): one comparison per name, not per name and point."""
    names = sorted(set(columns) - skip)
    kept = _recorded(points, names)
    if kept is None:
        return np.asarray(False)
    hit: np.ndarray = np.asarray(True)
    vector = False  # a column of several points (else one point: the answer is 0-d)
    for name in names:
        column, recorded = one_value(columns[name]), kept[name]
        if column.ndim:
            column, vector = column[np.newaxis, :], True
        hit = hit & ((column >= recorded) if name in grows else (column == recorded))
        if not hit.any():
            return np.asarray(False)
    return np.asarray(hit.any(axis=0) if vector else hit.any())


_RECORDED: dict[tuple[int, tuple[str, ...]], tuple[Any, Any, int, dict[str, np.ndarray] | None]] = {}


def _recorded(points: Sequence[Mapping[str, Any]], names: list[str]) -> dict[str, np.ndarray] | None:
    """``points``' values of ``names`` as columns (one row per point that has them all), cached per list: a list
    the caller only appends to (or empties), as the worker's and ``ValidPoints.bound``'s are; it is rebuilt when
    the list's first or last point or its length changed."""
    key = (id(points), tuple(names))
    got = _RECORDED.get(key)
    if got is not None and got[2] == len(points) and points and got[0] == points[0] and got[1] == points[-1]:
        return got[3]
    having = [p for p in points if all(name in p for name in names)]
    columns = {name: _array([p[name] for p in having]).reshape(-1, 1) for name in names} if having else None
    if len(_RECORDED) > 64:
        _RECORDED.clear()
    _RECORDED[key] = (points[0] if points else None, points[-1] if points else None, len(points), columns)
    return columns


def one_value(column: Any) -> np.ndarray:
    """A column of a vectorised rule (``constraint_mask``), as one 0-d value when every entry is the same one
    broadcast (a fixed knob: its column's strides are 0), so comparing it costs one comparison, not one per point
    (an object array of text compares entry by entry in Python)."""
    array = np.asarray(column)
    if array.ndim and array.size and not any(array.strides):
        return np.asarray(array.flat[0])
    return array


def _array(values: list[Any]) -> np.ndarray:
    """Numbers as a numeric array (ints stay ints); anything else (text, bool mixes) as an object array."""
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        if all(isinstance(v, int) for v in values) and max(abs(v) for v in values) < 2**62:
            return np.asarray(values, dtype=np.int64)
        return np.asarray(values, dtype=np.float64)
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
