"""A scenario entry's knobs under one flat namespace, and back.

``cmd_args`` tables flatten to dotted names, ``extra_env_vars`` are named ``extra_env_vars.<VAR>``, and
``num_nodes`` is ``num_nodes``; ``split_knobs`` turns one trial's flat values back into the three.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

ENV_PREFIX = "extra_env_vars."
NUM_NODES = "num_nodes"


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
