"""The JSON ``cloudai serve`` speaks, as pure functions (the ASGI guard in front of it: ``cloudai.serve.guard``).

Shapes follow ``openenv-core`` 0.3.0 (``openenv.core.env_server.types``):

* ``/schema`` -> ``{"action", "observation", "state"}`` JSON Schemas. The action schema is
  an object with one required property per chosen knob (``enum`` for a categorical knob,
  ``type`` number/integer with ``minimum``/``maximum`` for a range) and the optional
  ``metadata`` object every OpenEnv ``Action`` has; ``additionalProperties`` is false.
* an observation payload is ``{"observation": {...}, "reward": float | None, "done": bool}``;
  the observation holds one field per ``agent_metrics`` name (number, ``null`` for NaN) or
  per structured leaf, and ``trial`` (``step``, ``episode``, ``status``, ``env_params``): an
  object, so clients that take "the numeric fields" as the observation skip it. The trial's
  ``status`` and ``reason`` also travel in the observation's ``metadata`` (OpenEnv's slot for
  what is not observed): a ``constraint`` or ``failed`` trial must not read as ``ok`` remotely.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from typing import Any

from cloudai.errors import ConfigError
from cloudai.gymserver.layout import nest
from cloudai.gymserver.spaces import ObsLeafDescriptor as ObsLeaf
from cloudai.space import Categorical, Space

log = logging.getLogger("cloudai.serve")

_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))
_TRIAL = {
    "type": "object",
    "description": "cloudai bookkeeping: the trajectory.csv step, episode, status and env_params of this trial",
    "properties": {
        "step": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "episode": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "status": {"type": "string"},
        "reason": {"type": "string"},
        "env_params": {"type": "object"},
    },
}
_STATE = {
    "title": "State",
    "type": "object",
    "additionalProperties": True,
    "properties": {
        "episode_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "step_count": {"type": "integer", "minimum": 0, "default": 0},
        "next_step": {"type": "integer", "description": "the trajectory.csv step the next trial will get"},
    },
}


def _json_type(value: Any) -> str | None:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), None)


def knob_schema(space: Space) -> dict[str, Any]:
    """The JSON Schema of one action: the chosen knobs (fixed ones are the server's business)."""
    properties: dict[str, Any] = {}
    for dim in space.dims:
        if isinstance(dim, Categorical):
            prop: dict[str, Any] = {"enum": list(dim.choices)}
            types = {_json_type(c) for c in dim.choices}
            if len(types) == 1 and None not in types:
                prop["type"] = types.pop()
        else:
            integer = dim.dtype == "int"
            low, high = (math.ceil(dim.low), math.floor(dim.high)) if integer else (dim.low, dim.high)
            prop = {"type": "integer" if integer else "number", "minimum": low, "maximum": high}
            if dim.log:
                prop["description"] = "log-scaled range"
        properties[dim.name] = {"title": dim.name, **prop}
    properties["metadata"] = {"type": "object", "title": "Metadata", "description": "ignored by cloudai"}
    return {
        "title": "CloudAIAction",
        "type": "object",
        "properties": properties,
        "required": list(space.names),
        "additionalProperties": False,
    }


def observation_schema(names: list[str], leaves: Mapping[str, ObsLeaf] | None) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    if leaves is None:
        for name in names:
            properties[name] = {"title": name, "anyOf": [{"type": "number"}, {"type": "null"}]}
    else:
        properties |= _tree_schema(nest(leaves))
    properties["trial"] = _TRIAL
    properties["done"] = {"type": "boolean", "default": False}
    properties["reward"] = {"anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "number"}, {"type": "null"}]}
    properties["metadata"] = {"type": "object"}
    return {"title": "CloudAIObservation", "type": "object", "properties": properties}


def _tree_schema(tree: Mapping[str, Any]) -> dict[str, Any]:
    """Leaves nested as declared (``layout.nest``) as JSON Schema properties, a nested dict an object."""
    return {
        name: _leaf_schema(name, value)
        if isinstance(value, ObsLeaf)
        else {"title": name, "type": "object", "properties": _tree_schema(value), "required": list(value)}
        for name, value in tree.items()
    }


def _leaf_schema(name: str, leaf: ObsLeaf) -> dict[str, Any]:
    if leaf.kind == "categorical":
        return {"title": name, "type": "integer", "minimum": 0, "maximum": int(leaf.n or 1) - 1}
    number: dict[str, Any] = {"type": "number"}
    if leaf.low is not None and math.isfinite(leaf.low):
        number["minimum"] = leaf.low
    if leaf.high is not None and math.isfinite(leaf.high):
        number["maximum"] = leaf.high
    if (leaf.n or 1) == 1:
        return {"title": name, **number}
    return {"title": name, "type": "array", "items": number, "minItems": leaf.n, "maxItems": leaf.n}


def schemas(space: Space, names: list[str], leaves: Mapping[str, ObsLeaf] | None) -> dict[str, Any]:
    return {"action": knob_schema(space), "observation": observation_schema(names, leaves), "state": _STATE}


def finite(value: float) -> float | None:
    """JSON has no NaN or infinity: they travel as null (as OpenEnv's own server sends them)."""
    return float(value) if math.isfinite(value) else None


def observation_fields(values: list[float], names: list[str], leaves: Mapping[str, ObsLeaf] | None) -> dict[str, Any]:
    """The observation object for one flat observation list (agent_metrics order, or leaf order)."""
    if leaves is None:
        return {name: finite(float(v)) for name, v in zip(names, values, strict=False)}
    fields: dict[str, Any] = {}
    offset = 0
    for name, leaf in leaves.items():
        size = leaf.width
        chunk = [finite(float(v)) for v in values[offset : offset + size]]
        offset += size
        if leaf.kind == "categorical":
            fields[name] = None if chunk[0] is None else int(chunk[0])
        else:
            fields[name] = chunk[0] if size == 1 else chunk
    return nest(fields)


def payload(
    values: list[float],
    reward: float | None,
    done: bool,
    info: Mapping[str, Any],
    names: list[str],
    leaves: Mapping[str, ObsLeaf] | None,
) -> dict[str, Any]:
    """``{"observation", "reward", "done"}``, the data of an OpenEnv observation reply."""
    status, reason = str(info.get("status", "ok")), str(info.get("reason") or "")
    trial = {
        "step": info.get("step"),
        "episode": info.get("episode"),
        "status": status,
        "reason": reason,
        "env_params": dict(info.get("env_params", {})),
    }
    metadata = {"status": status, "reason": reason}
    observation = {**observation_fields(values, names, leaves), "trial": trial, "metadata": metadata}
    return {"observation": observation, "reward": None if reward is None else finite(reward), "done": bool(done)}


def action_errors(exc: ConfigError) -> list[dict[str, Any]]:
    """A ``ConfigError`` as pydantic-style ``errors`` entries (what OpenEnv's VALIDATION_ERROR carries); the hint
    (e.g. the candidates of a categorical knob) is part of the message: a client must learn what is accepted."""
    return [
        {
            "type": "value_error",
            "loc": ["action", *(p.field.split(".")[1:] if p.field else [])],
            "msg": f"{p.message} ({p.hint})" if p.hint else p.message,
        }
        for p in exc.problems
    ]


def dumps(message: Mapping[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), default=str)


class _HandshakeRefusedFilter(logging.Filter):
    """uvicorn logs an ERROR for every WebSocket handshake our ``Guard`` refuses (the app returns without
    accepting); ``RefusalLog`` already noted it, once per client per minute."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing handshake" not in record.getMessage()


_FILTER = _HandshakeRefusedFilter()


def quiet_refused_handshakes() -> None:
    """Install the filter on uvicorn's error logger (idempotent)."""
    logger = logging.getLogger("uvicorn.error")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
