"""OpenEnv's JSON Schemas as cloudai knobs and observations: pure functions, no I/O.

``action_fields`` and ``field_space`` turn the server's action schema into the knobs an agent
chooses (see ``cloudai.gymserver.remote`` for the rules), ``observation_plan`` picks the numeric
observation fields in ``metrics`` order, and ``observe`` reads one observation along that plan.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cloudai.errors import ConfigError, Problem
from cloudai.gymserver.spaces import ActionSpec, ContinuousSpace

_NOT_OBSERVED = frozenset({"done", "reward", "metadata", "trial"})  # OpenEnv moves these out; cloudai serve's own


_INDEXED = re.compile(r"^(?P<field>.+)\[(?P<index>\d+)\]$")


def action_fields(
    schema: Mapping[str, Any], declared: Mapping[str, Any]
) -> tuple[dict[str, ActionSpec | None], list[str]]:
    """Each action field's offered space (``None``: no bounds) and the required names, from a JSON Schema.

    A schema without ``properties`` (a free-form action) offers exactly the declared fields.
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return dict.fromkeys(declared), []
    defs = schema.get("$defs", {})
    offered = {name: field_space(_resolve(prop, defs)) for name, prop in properties.items()}
    return offered, [name for name in schema.get("required", []) if name in offered]


def field_space(prop: Mapping[str, Any]) -> ActionSpec | None:
    """The space one JSON Schema property offers, or ``None`` when it is unbounded or not a knob."""
    if "enum" in prop:
        values = [v for v in prop["enum"] if v is not None]
        return values or None
    if "const" in prop:
        return [prop["const"]]
    kind = prop.get("type")
    if kind == "boolean":
        return [False, True]
    if kind not in ("number", "integer"):
        return None
    integer = kind == "integer"
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is None and "exclusiveMinimum" in prop:
        bound = prop["exclusiveMinimum"]
        low = bound + 1 if integer else math.nextafter(bound, math.inf)
    if high is None and "exclusiveMaximum" in prop:
        bound = prop["exclusiveMaximum"]
        high = bound - 1 if integer else math.nextafter(bound, -math.inf)
    if low is None or high is None or low > high:
        return None
    if low == high:
        return [low]
    return ContinuousSpace(low, high, "int" if integer else "float")


def observation_plan(
    schema: Mapping[str, Any], metrics: Sequence[str] | None
) -> tuple[list[str], list[tuple[str, int | None]]]:
    """Slot names and, per name, (field, list index or None), from the observation JSON Schema."""
    properties = schema.get("properties")
    defs = schema.get("$defs", {})
    props = _fields({n: p for n, p in (properties or {}).items() if n not in _NOT_OBSERVED}, defs)
    if metrics is None:
        names: list[str] = []
        for name, prop in props.items():
            kind = prop.get("type")
            if kind in ("number", "integer", "boolean"):
                names.append(name)
            elif kind == "array" and prop.get("minItems") is not None and prop.get("minItems") == prop.get("maxItems"):
                names += [f"{name}[{i}]" for i in range(int(prop["minItems"]))]
        metrics = names
    plan: list[tuple[str, int | None]] = []
    problems: list[Problem] = []
    for name in metrics:
        match = _INDEXED.match(name)
        field, index = (match["field"], int(match["index"])) if match and match["field"] in props else (name, None)
        if properties is not None and field not in props:
            close = difflib.get_close_matches(field, props, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"the server observes: {', '.join(props) or 'nothing'}"
            problems.append(Problem(None, "agent_metrics", f"the server's observation has no field '{field}'", hint))
        plan.append((field, index))
    if problems:
        raise ConfigError(problems=problems)
    return list(metrics), plan


def _fields(props: Mapping[str, Any], defs: Mapping[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """The observation's fields by dotted path: a nested object's own fields (``queue.depth``), not the object."""
    found: dict[str, dict[str, Any]] = {}
    for name, raw in props.items():
        prop = _resolve(raw, defs)
        inner = prop.get("properties")
        if prop.get("type") == "object" and isinstance(inner, Mapping):
            found |= _fields(inner, defs, f"{prefix}{name}.")
        else:
            found[f"{prefix}{name}"] = prop
    return found


def _at(observation: Mapping[str, Any], field: str) -> Any:
    """The value at a dotted path (``queue.depth``): a key holding the dot wins over the nested dicts."""
    if field in observation:
        return observation[field]
    head, dot, rest = field.partition(".")
    inner = observation.get(head)
    return _at(inner, rest) if dot and isinstance(inner, Mapping) else None


def observe(observation: Mapping[str, Any], plan: Sequence[tuple[str, int | None]]) -> list[float]:
    """The observation as floats in plan order: bools 0/1, lists flattened, anything else NaN."""
    values: list[float] = []
    for field, index in plan:
        value = _at(observation, field)
        if index is not None:
            value = value[index] if isinstance(value, list) and index < len(value) else None
        if isinstance(value, list):
            values += [_number(v) for v in value]
        else:
            values.append(_number(value))
    return values


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def _resolve(prop: Any, defs: Mapping[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` and unwrap ``Optional`` (an ``anyOf`` with one non-null branch)."""
    if not isinstance(prop, dict):
        return {}
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        prop = {**defs.get(ref.removeprefix("#/$defs/"), {}), **{k: v for k, v in prop.items() if k != "$ref"}}
    branches = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(branches, list):
        real = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        if len(real) == 1:
            return {**_resolve(real[0], defs), **{k: v for k, v in prop.items() if k not in ("anyOf", "oneOf")}}
    return prop


def trial_status(observation: Mapping[str, Any]) -> dict[str, str]:
    """``{"status", "reason"}`` a server reported for a step (OpenEnv ``metadata``, else ``trial``); ``{}`` if none."""
    for key in ("metadata", "trial"):
        slot = observation.get(key)
        if isinstance(slot, Mapping) and isinstance(slot.get("status"), str) and slot["status"]:
            reason = slot.get("reason")
            return {"status": slot["status"], "reason": reason if isinstance(reason, str) else ""}
    return {}
