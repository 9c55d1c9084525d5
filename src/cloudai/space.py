"""The parameter space of a test: the only place a grid is expanded, and lazily.

A test's knobs come from ``cmd_args`` (nested tables flattened to dotted names),
``extra_env_vars`` (named ``extra_env_vars.<VAR>``) and ``num_nodes``. A value is

* a scalar: fixed, the same in every trial;
* a non-empty list: a categorical dimension;
* a table ``{low, high, log = false, dtype = "float" | "int", grid_points}``: a range.

Grid points are numbered in mixed radix (the last dimension varies fastest), so
``grid_point(i)``/``grid_index(p)`` cost O(dimensions) and a 10^9-point grid costs nothing
until asked. Ranges join a grid only with ``grid_points``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Any, Literal, TypeGuard, overload

from cloudai.errors import ConfigError, Problem

RANGE_KEYS = frozenset({"low", "high", "log", "dtype", "grid_points"})
ENV_PREFIX = "extra_env_vars."
NUM_NODES = "num_nodes"


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


def flatten(table: Mapping[str, Any], prefix: str = "", whole: Collection[str] = ()) -> dict[str, Any]:
    """Nested tables to dotted names; range tables, the names in ``whole``, and empty tables (an empty
    ``[cmd_args.prefill]`` still says "disaggregated") stay whole."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and not is_range(value) and name not in whole:
            flat.update(flatten(value, f"{name}.", whole))
        else:
            flat[name] = value
    return flat


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for name, value in flat.items():
        *parents, leaf = name.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def is_range(value: Any) -> bool:
    """A table with ``low`` or ``high`` is meant as a range (``parse_space`` reports what is wrong with it)."""
    return isinstance(value, Mapping) and ("low" in value or "high" in value)


def parse_space(
    flat: Mapping[str, Any],
    *,
    file: object = None,
    field_of: Callable[[str], str] | None = None,
    whole: Collection[str] = (),
) -> Space:
    """Classify each flat knob as fixed, categorical or range; every malformed one is reported.

    ``field_of(name)`` gives the TOML path used in error messages (default ``cmd_args.<name>``). A knob named in
    ``whole`` (or under one) is fixed whatever its value: a list there is the value (CloudAI's dse_excluded_args).
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
    return Space(fixed, tuple(dims), tuple(flat))


def entry_knobs(
    cmd_args: Mapping[str, Any], extra_env_vars: Mapping[str, Any], num_nodes: Any, whole: Collection[str] = ()
) -> dict[str, Any]:
    """All knobs of a scenario entry under one flat namespace (see the module docstring); ``whole``: cmd_args
    names kept whole (their tables are not flattened)."""
    knobs = flatten(cmd_args, whole=whole)
    knobs.update({f"{ENV_PREFIX}{k}": v for k, v in extra_env_vars.items()})
    knobs[NUM_NODES] = num_nodes
    return knobs


def split_knobs(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str], int]:
    """The inverse of ``entry_knobs`` for one trial: (nested cmd_args, env vars, num_nodes)."""
    cmd_args = {k: v for k, v in values.items() if not k.startswith(ENV_PREFIX) and k != NUM_NODES}
    env = {k.removeprefix(ENV_PREFIX): str(v) for k, v in values.items() if k.startswith(ENV_PREFIX)}
    return unflatten(cmd_args), env, int(values.get(NUM_NODES, 1))


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


REGIME_BINS = 3  # regimes per range env param in best.toml, the terminal and the report


def env_cell(value: Any) -> str:
    """How a sampled value is written to env.csv: TOML spelling for booleans, ``str`` otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class RegimeBins:
    """How one env param's values fall into *regimes*: the one binning best.toml, the terminal and the report use.

    A list param: one regime per candidate (labelled as env.csv writes it). A range: ``count`` equal-width bins
    of ``[low, high]`` in the scale it is sampled in (log for ``loguniform``), labelled ``[a, b)`` (the last
    ``[a, b]``). The run records each param's bins in ``run.json`` (``to_json``) so a report of the run bins
    exactly as the run did, without the TOML.
    """

    candidates: tuple[str, ...] | None = None
    weights: tuple[float, ...] | None = None  # a list param's draw weights, one per candidate (None: equal)
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    count: int = REGIME_BINS

    def label(self, value: Any) -> str:
        """The regime of ``value`` (a sampled value, or its env.csv cell read back as a number or word)."""
        if self.candidates is not None or not _is_number(value):
            return env_cell(value)
        lo, width = self._extent
        value = float(value)
        inside = width > 0 and (value > 0 or not self.log)
        index = int(((math.log(value) if self.log else value) - lo) / width * self.count) if inside else 0
        return self._texts[min(max(index, 0), self.count - 1)]

    def labels(self) -> list[str]:
        """Every regime, in order: the candidates, or the bins from low to high."""
        return list(dict.fromkeys(self.candidates)) if self.candidates is not None else list(self._texts)

    def shares(self) -> dict[str, float]:
        """Each regime's probability under the draw (a list's weights, normalised; a range's bins: not a
        distribution over regimes here, equal shares)."""
        labels = self.candidates if self.candidates is not None else self._texts
        weights = self.weights if self.weights is not None else (1.0,) * len(labels)
        shares: dict[str, float] = {}
        for label, weight in zip(labels, weights, strict=True):
            shares[label] = shares.get(label, 0.0) + weight / sum(weights)
        return shares

    def to_json(self) -> dict[str, Any]:
        if self.candidates is not None:
            weights = {"weights": list(self.weights)} if self.weights is not None else {}
            return {"candidates": list(self.candidates), **weights}
        return {"low": self.low, "high": self.high, "log": self.log, "bins": self.count}

    @classmethod
    def from_json(cls, raw: object) -> RegimeBins | None:
        """The bins ``to_json`` wrote; None for anything else (a hand-edited or older run.json)."""
        if not isinstance(raw, dict):
            return None
        if isinstance(raw.get("candidates"), list):
            candidates = tuple(str(c) for c in raw["candidates"])
            return cls(candidates=candidates, weights=_weights(raw.get("weights"), len(candidates)))
        low, high, bins = raw.get("low"), raw.get("high"), raw.get("bins")
        if not (_is_number(low) and _is_number(high) and isinstance(bins, int) and bins >= 1 and high > low):
            return None
        if raw.get("log") and low <= 0:
            return None
        return cls(low=float(low), high=float(high), log=bool(raw.get("log")), count=bins)

    @cached_property
    def _extent(self) -> tuple[float, float]:
        """(low, high - low) in the sampling scale."""
        lo, hi = (math.log(self.low), math.log(self.high)) if self.log else (self.low, self.high)
        return lo, hi - lo

    @cached_property
    def _texts(self) -> tuple[str, ...]:
        """Each bin's label: ``[a, b)``, the last one closed."""
        lo, width = self._extent
        edges = [lo + width * i / self.count for i in range(self.count + 1)]
        edges = [math.exp(e) for e in edges] if self.log else edges
        last = self.count - 1
        return tuple(f"[{a:.4g}, {b:.4g}{']' if i == last else ')'}" for i, (a, b) in enumerate(pairwise(edges)))


def _weights(raw: object, count: int) -> tuple[float, ...] | None:
    """Recorded draw weights, when they are ``count`` non-negative numbers with a positive sum (else None)."""
    if not isinstance(raw, list) or len(raw) != count or not all(_is_number(w) and w >= 0 for w in raw):
        return None
    weights = tuple(float(w) for w in raw)
    return weights if sum(weights) > 0 else None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


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
