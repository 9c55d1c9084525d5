"""Knob values checked against a test's space, and structured-observation leaves: pure, no Gymnasium.

Shared by the Gymnasium adapter (``encode_action``) and ``cloudai serve`` (values that arrive
over the wire), so both accept and reject exactly the same actions.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from cloudai.errors import AgentError, ConfigError
from cloudai.gymserver.spaces import ObsLeafDescriptor, as_leaf
from cloudai.space import Categorical, Range, Space


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps bools apart from numbers (TOML ``true`` is not ``1``)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def candidate_index(dim: Categorical, value: Any) -> int:
    """The index of ``value`` among ``dim.choices``; ``ConfigError`` when it is not one of them."""
    for index, choice in enumerate(dim.choices):
        if _same(choice, value):
            return index
    raise ConfigError(
        f"{value!r} is not a candidate of '{dim.name}'",
        field=f"cmd_args.{dim.name}",
        hint=f"candidates: {', '.join(repr(c) for c in dim.choices)}",
    )


def range_value(dim: Range, value: Any) -> float | int:
    """``value`` checked against a range: a finite number in [low, high], integral for int ranges."""
    field = f"cmd_args.{dim.name}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"'{dim.name}' takes a number, not {value!r}", field=field)
    number = float(value)
    if not math.isfinite(number) or not dim.low <= number <= dim.high:
        raise ConfigError(f"{value!r} is outside '{dim.name}' [{dim.low:g}, {dim.high:g}]", field=field)
    if dim.dtype == "int":
        if number != round(number):
            raise ConfigError(f"'{dim.name}' is an int range; {value!r} is not an integer", field=field)
        return round(number)
    return number


def validate_point(space: Space, values: Mapping[str, Any]) -> dict[str, Any]:
    """The chosen knobs of ``values``, checked and normalized; fixed knobs may be repeated unchanged."""
    unknown = [k for k in values if k not in space.names and k not in space.fixed]
    if unknown:
        raise ConfigError(f"unknown knob(s) {sorted(unknown)}; the action takes {list(space.names)}")
    changed = [k for k in values if k in space.fixed and not _same(values[k], space.fixed[k])]
    if changed:
        raise ConfigError(f"knob(s) {changed} are fixed by the test and cannot be chosen")
    missing = [name for name in space.names if name not in values]
    if missing:
        raise ConfigError(f"missing knob(s) {missing}")
    point: dict[str, Any] = {}
    for dim in space.dims:
        value = values[dim.name]
        point[dim.name] = dim.choices[candidate_index(dim, value)] if isinstance(dim, Categorical) else (
            range_value(dim, value))  # fmt: skip
    return point


DESCRIBE_HOOKS = ("observation_descriptors", "structured_observation_descriptors")  # ours, CloudAI's (PR #934)


def observation_leaves(env: object) -> dict[str, ObsLeafDescriptor] | None:
    """The env's structured observation leaves, when its ``observation_descriptors()`` (or CloudAI's
    ``structured_observation_descriptors()``) offers any, each in one vocabulary (``as_leaf``); else None."""
    for hook in DESCRIBE_HOOKS:
        describe: Callable[[], Mapping[str, Any] | None] | None = getattr(env, hook, None)
        leaves = describe() if callable(describe) else None
        if leaves is not None:
            return {str(name): as_leaf(leaf) for name, leaf in leaves.items()}
    return None


def check_action(space: Space, action: Mapping[str, Any]) -> None:
    """An action names exactly the space's dimensions (shared with the live env); ``AgentError`` otherwise."""
    names = set(space.names)
    if set(action) != names:
        unknown, missing = sorted(set(action) - names), sorted(names - set(action))
        raise AgentError(f"action {action!r} does not fit the space: unknown {unknown}, missing {missing}")
