"""The vocabulary a ``GymServer`` describes itself in: ranges and observation leaves.

A server's action space is ``{name: list | ContinuousSpace}``: a list is a categorical knob
(its candidates), a ``ContinuousSpace`` a numeric range. ``to_space`` turns that into a
``cloudai.space.Space`` so agents see a live server exactly as they see a test's knobs.

A server's observation space is either the metric names (a flat ``list[str]``, each slot a
float) or ``{leaf: ObsLeafDescriptor}`` for a structured observation the Gymnasium adapter
maps to a ``Dict`` of ``Box``/``Discrete``.

Both classes validate themselves on construction and raise ``ConfigError``: a space comes
from a config file or a server's schema, so a bad one is bad input, not a bug.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cloudai.errors import ConfigError, Problem
from cloudai.space import Categorical, Dimension, Range, Space


@dataclass(frozen=True)
class ContinuousSpace:
    """A numeric knob in ``[low, high]`` (both ends included); ``dtype="int"`` takes integers only."""

    low: float
    high: float
    dtype: Literal["float", "int"] = "float"
    log: bool = False

    def __post_init__(self) -> None:
        for bound in (self.low, self.high):
            if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
                raise ConfigError(f"a range bound must be a finite number, not {bound!r}")
        if self.low >= self.high:
            raise ConfigError(f"range low ({self.low}) must be less than high ({self.high})")
        if self.dtype not in ("float", "int"):
            raise ConfigError(f"range dtype must be 'float' or 'int', not {self.dtype!r}")
        if self.log and self.low <= 0:
            raise ConfigError(f"a log range needs low > 0, not {self.low}")

    def contains(self, value: Any) -> bool:
        """True when ``value`` is a number inside the range (and integral for an int range)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        inside = self.low <= value <= self.high
        return inside and (self.dtype == "float" or float(value).is_integer())


@dataclass(frozen=True)
class ObsLeafDescriptor:
    """One leaf of a structured observation: a ``box`` of ``n`` floats in [low, high] or a ``categorical`` of ``n``.

    CloudAI's spelling (its PR #934) is accepted as written: kind ``"discrete"`` is ``"categorical"``, and a box's
    width may be given as ``dim``; both are normalised here, so everything downstream sees one vocabulary."""

    kind: Literal["box", "categorical", "discrete"]
    low: float | None = None
    high: float | None = None
    n: int | None = None
    dim: int | None = None  # CloudAI's name for a box's width (``n`` here)

    def __post_init__(self) -> None:
        if self.kind == "discrete":
            object.__setattr__(self, "kind", "categorical")
        if self.kind == "box":
            if self.dim is not None:
                if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 1:
                    raise ConfigError(f"a box leaf's dim must be >= 1, not {self.dim!r}")
                object.__setattr__(self, "n", self.dim if self.n in (None, self.dim) else self.n)
            low = -math.inf if self.low is None else self.low
            high = math.inf if self.high is None else self.high
            if not low <= high:
                raise ConfigError(f"box leaf low ({self.low}) must not exceed high ({self.high})")
        elif self.kind == "categorical":
            if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
                raise ConfigError(f"a categorical leaf needs n >= 1, not {self.n!r}")
        else:
            raise ConfigError(f"an observation leaf is 'box' or 'categorical' ('discrete'), not {self.kind!r}")
        object.__setattr__(self, "dim", None)  # read into n: one spelling downstream

    @property
    def width(self) -> int:
        """How many values of a flat observation the leaf takes: a box's ``n``, a categorical's one."""
        return int(self.n or 1) if self.kind == "box" else 1


def as_leaf(leaf: Any) -> ObsLeafDescriptor:
    """Any leaf description as an ``ObsLeafDescriptor``: ours, CloudAI's (a pydantic ``ObsLeafDescriptor`` with
    ``kind``/``dim``/``n``), or a mapping of those fields (from JSON). The one place spellings are reconciled."""
    if isinstance(leaf, ObsLeafDescriptor):
        return leaf
    fields = ("kind", "low", "high", "n", "dim")
    get = leaf.get if isinstance(leaf, Mapping) else (lambda name: getattr(leaf, name, None))
    found = {name: get(name) for name in fields}
    kind = found.pop("kind")
    if kind not in ("box", "categorical", "discrete"):
        raise ConfigError(f"an observation leaf is 'box' or 'categorical' ('discrete'), not {kind!r} ({leaf!r})")
    return ObsLeafDescriptor(kind, **found)


ActionSpec = list[Any] | ContinuousSpace


def to_dimension(name: str, spec: ActionSpec) -> Dimension:
    """One server knob as a ``cloudai.space`` dimension (``Categorical`` or ``Range``)."""
    if isinstance(spec, ContinuousSpace):
        return Range(name, float(spec.low), float(spec.high), spec.log, spec.dtype)
    if not isinstance(spec, list | tuple) or not spec:
        raise ConfigError(f"knob '{name}' must be a non-empty list or a ContinuousSpace, not {spec!r}")
    return Categorical(name, tuple(spec))


def to_space(action_space: Mapping[str, ActionSpec], fixed: Mapping[str, Any] | None = None) -> Space:
    """A server's action space (plus values it holds fixed) as the ``Space`` agents search."""
    return Space(dict(fixed or {}), tuple(to_dimension(name, spec) for name, spec in action_space.items()))


def narrow_space(
    offered: Mapping[str, ActionSpec | None], declared: Mapping[str, Any], *, prefix: str = "cmd_args"
) -> tuple[dict[str, ActionSpec], dict[str, Any]]:
    """The knobs agents choose and the values held fixed, from what a server offers and a test declares.

    ``offered[name]`` is the server's own space for a field, ``None`` when the server gives no
    bounds. A declared list narrows to those candidates, a ``{low, high, dtype, log}`` table to
    that range, a scalar fixes the field; each must lie inside what is offered. Offered fields
    not declared keep their space, unbounded ones (``None``) are left out. Declared names the
    server does not offer are ignored here (the caller decides whether that is an error).
    """
    dims: dict[str, ActionSpec] = {}
    fixed: dict[str, Any] = {}
    problems: list[Problem] = []
    for name, space in offered.items():
        if name not in declared:
            if space is not None:
                dims[name] = space
            continue
        value = declared[name]
        try:
            if isinstance(value, list):
                dims[name] = _narrow_list(name, space, value)
            elif isinstance(value, Mapping) and ("low" in value or "high" in value):
                dims[name] = _narrow_range(name, space, value)
            else:
                _check_member(name, space, value)
                fixed[name] = value
        except ConfigError as exc:
            problems += [Problem(p.file, f"{prefix}.{name}", p.message, p.hint) for p in exc.problems]
    if problems:
        raise ConfigError(problems=problems)
    return dims, fixed


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _check_member(name: str, space: ActionSpec | None, value: Any) -> None:
    if isinstance(space, ContinuousSpace) and not space.contains(value):
        raise ConfigError(f"{value!r} is outside '{name}' [{space.low:g}, {space.high:g}] ({space.dtype})")
    if isinstance(space, list) and not any(_same(value, choice) for choice in space):
        raise ConfigError(f"{value!r} is not a value '{name}' takes", hint=f"it takes {space!r}")


def _narrow_list(name: str, space: ActionSpec | None, values: list[Any]) -> list[Any]:
    if not values:
        raise ConfigError(f"'{name}' has an empty list", hint="give at least one value, or a scalar")
    for value in values:
        _check_member(name, space, value)
    return list(values)


def _narrow_range(name: str, space: ActionSpec | None, table: Mapping[str, Any]) -> ContinuousSpace:
    unknown = set(table) - {"low", "high", "dtype", "log", "grid_points"}
    if unknown or "low" not in table or "high" not in table:
        raise ConfigError(f"'{name}' range needs low and high (and optionally dtype, log)", hint=f"got {sorted(table)}")
    if isinstance(space, list):
        raise ConfigError(f"'{name}' takes one of {space!r}, not a range", hint="give a list of those values")
    dtype = table.get("dtype", space.dtype if space is not None else "float")
    declared = ContinuousSpace(table["low"], table["high"], dtype, bool(table.get("log", False)))
    if space is not None and not (space.low <= declared.low and declared.high <= space.high):
        inner, outer = f"[{declared.low:g}, {declared.high:g}]", f"[{space.low:g}, {space.high:g}]"
        raise ConfigError(f"'{name}' range {inner} is outside {outer}", hint="narrow within the server's range")
    return declared
