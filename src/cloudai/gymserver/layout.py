"""Where each value of an observation belongs: the one map between a server's observation space and flat columns.

A server declares its observation as metric names (``["throughput", "p99"]``: one number each) or as leaves
(``{"rate": box of dim 2, "phase": categorical of 3}``, nested dicts allowed: ``{"queue": {"depth": box}}``).
Everything cloudai records is flat, so every leaf value gets a column with a stable name:

* a one-wide leaf is its dotted path (``rate``, ``queue.depth``);
* a box of width ``n`` > 1 is ``rate[0]`` .. ``rate[n-1]`` (the remote client's own spelling of an array field).

``agent_metrics`` may name a leaf (all its columns, in order) or one column. A step's observation may come as a
flat sequence (its width must be the layout's) or as a mapping of leaves (nested, or by dotted path); either way
each value must fit its leaf (a finite number inside a box's bounds, an integer in ``[0, n)`` for a categorical),
else the step fails with the reason (``problem``) — never a silently shifted or truncated value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.gymserver.spaces import ObsLeafDescriptor, as_leaf

ONE = ObsLeafDescriptor("box")  # a metric name of a flat observation: one unbounded number


def _is_leaf(value: Any) -> bool:
    kind = value.get("kind") if isinstance(value, Mapping) else getattr(value, "kind", None)
    return kind is not None


def leaves_of(space: Sequence[str] | Mapping[str, Any]) -> dict[str, ObsLeafDescriptor]:
    """The leaves of an observation space by dotted path, in declaration order (names: one-wide boxes)."""
    if not isinstance(space, Mapping):
        return {str(name): ONE for name in space}
    found: dict[str, ObsLeafDescriptor] = {}
    for name, value in space.items():
        if _is_leaf(value):
            found[str(name)] = as_leaf(value)
        elif isinstance(value, Mapping):
            found |= {f"{name}.{inner}": leaf for inner, leaf in leaves_of(value).items()}
        else:
            raise ConfigError(f"observation '{name}': a leaf needs a kind ('box' or 'categorical'), not {value!r}")
    return found


def columns_of(name: str, leaf: ObsLeafDescriptor) -> list[str]:
    return [name] if leaf.width == 1 else [f"{name}[{i}]" for i in range(leaf.width)]


class ObservationLayout:
    """The columns of an observation space and the checks and shapes of one observation (module docstring)."""

    def __init__(self, space: Sequence[str] | Mapping[str, Any]) -> None:
        self.structured = isinstance(space, Mapping)
        self.leaves = leaves_of(space)
        self.columns = [column for name, leaf in self.leaves.items() for column in columns_of(name, leaf)]
        self._owner = [(name, leaf) for name, leaf in self.leaves.items() for _ in range(leaf.width)]

    @property
    def width(self) -> int:
        return len(self.columns)

    def select(self, metrics: Sequence[str] | None, field: str) -> list[str]:
        """The columns ``metrics`` name (a leaf: all its columns); all of them when None. Unknown: ``ConfigError``."""
        if metrics is None:
            return list(self.columns)
        chosen: list[str] = []
        problems = []
        for metric in metrics:
            if metric in self.leaves:
                chosen += columns_of(metric, self.leaves[metric])
            elif metric in self.columns:
                chosen.append(metric)
            else:
                names = list(self.leaves)
                said = f"the server observes no '{metric}' (it observes {', '.join(names)})"
                problems.append(Problem(None, field, said, did_you_mean(metric, [*names, *self.columns])))
        if problems:
            raise ConfigError(problems=problems)
        return chosen

    def leaves_for(self, columns: Sequence[str]) -> dict[str, ObsLeafDescriptor] | None:
        """The leaves ``columns`` cover whole, in their order; None when a column is part of a leaf only."""
        found: dict[str, ObsLeafDescriptor] = {}
        index = 0
        while index < len(columns):
            name = next((n for n, leaf in self.leaves.items() if columns_of(n, leaf)[0] == columns[index]), None)
            if name is None:
                return None
            wanted = columns_of(name, self.leaves[name])
            if list(columns[index : index + len(wanted)]) != wanted:
                return None
            found[name] = self.leaves[name]
            index += len(wanted)
        return found

    def flat(self, raw: Any, checked: Sequence[str] | None = None) -> tuple[list[Any], str]:
        """A server's observation as one value per column, and why it cannot be ("" when it can): ``problem``.

        A mapping is read leaf by leaf (nested or by dotted path); a sequence or array is taken as the columns."""
        if isinstance(raw, Mapping):
            values: list[Any] = []
            missing = []
            for name, leaf in self.leaves.items():
                found, value = _lookup(raw, name)
                if not found:
                    missing.append(name)
                    continue
                chunk = _sequence(value)
                if leaf.width == 1 and chunk is None:
                    values.append(value)
                elif chunk is None or len(chunk) != leaf.width:
                    return [], f"observation '{name}' holds {value!r}; its leaf takes {leaf.width} value(s)"
                else:
                    values += chunk
            if missing:
                return [], f"the server's observation has no {', '.join(repr(m) for m in missing)}"
            return values, self.problem(values, checked)
        columns = _sequence(raw)
        if columns is None:
            return [], f"the server's observation is {type(raw).__name__}, not a list or a mapping of its leaves"
        return columns, self.problem(columns, checked)

    def problem(self, values: Sequence[Any], checked: Sequence[str] | None = None) -> str:
        """Why ``values`` (one per column) is not an observation of this space; "" when it is. Each value must fit
        its leaf; of a flat space (metric names) only the ``checked`` columns (those recorded) must be numbers."""
        if len(values) != self.width:
            return f"the server observed {len(values)} value(s); its observation_space declares {self.width}"
        look = set(self.columns if self.structured or checked is None else checked)
        bad = [f"{column} = {value!r} ({why})" for column, value, (_, leaf) in zip(self.columns, values, self._owner,
               strict=True) if column in look and (why := _misfit(value, leaf))]  # fmt: skip
        return f"observation does not fit its space: {'; '.join(bad)}" if bad else ""

    def nested(self, columns: Sequence[str], values: Sequence[float]) -> dict[str, Any]:
        """``values`` of ``columns`` as the declared shape: leaves by name (nested dicts as declared), a box of width
        > 1 a list, a categorical an int, a missing value None."""
        by_column = dict(zip(columns, values, strict=True))
        out: dict[str, Any] = {}
        for name, leaf in self.leaves.items():
            chunk = [by_column.get(c) for c in columns_of(name, leaf)]
            if all(v is None for v in chunk):
                continue
            clean = [None if v is None or not math.isfinite(v) else v for v in chunk]
            if leaf.kind == "categorical":
                value: Any = None if clean[0] is None else int(clean[0])
            else:
                value = clean[0] if leaf.width == 1 else clean
            _put(out, name, value)
        return out


def _misfit(value: Any, leaf: ObsLeafDescriptor) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "not a finite number"
    if leaf.kind == "categorical":
        n = int(leaf.n or 1)
        return "" if float(value).is_integer() and 0 <= value < n else f"a categorical of {n} takes 0..{n - 1}"
    low = -math.inf if leaf.low is None else leaf.low
    high = math.inf if leaf.high is None else leaf.high
    return "" if low <= value <= high else f"outside [{leaf.low}, {leaf.high}]"


def _sequence(value: Any) -> list[Any] | None:
    if hasattr(value, "tolist") and getattr(value, "shape", ()) != ():
        value = value.reshape(-1).tolist() if hasattr(value, "reshape") else value.tolist()
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return None
    return [_plain(v) for v in value] if isinstance(value, list | tuple) else None


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") and getattr(value, "shape", None) == () else value


def _lookup(raw: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    if name in raw:
        return True, _plain(raw[name])
    head, dot, rest = name.partition(".")
    if dot and isinstance(raw.get(head), Mapping):
        return _lookup(raw[head], rest)
    return False, None


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"queue.depth": v}`` -> ``{"queue": {"depth": v}}`` (dotted leaf paths as the nested dicts declared)."""
    out: dict[str, Any] = {}
    for name, value in flat.items():
        _put(out, name, value)
    return out


def _put(out: dict[str, Any], name: str, value: Any) -> None:
    head, dot, rest = name.partition(".")
    if not dot:
        out[name] = value
        return
    _put(out.setdefault(head, {}), rest, value)
