"""Helpers of ``Workload.validate``: each candidate seen as the trial of its branch would see it, nested as the
args model reads it, and the problems it finds worded as the TOML gave them (an unknown knob's whole range or list,
an image that cannot reach an srun line as one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cloudai.config.fields import shown
from cloudai.config.messages import toml_value
from cloudai.space import Categorical, Space


def chosen_branch(space: Space, values: dict[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as a trial of the branch ``point``'s knob belongs to sees them: the selector set to that branch,
    the other branches' knobs left out (``Space.when``), so each branch's candidates are validated as they run."""
    if not space.when:
        return values
    for name in point:
        if name in space.when:
            selector, table = space.when[name]
            values = {**values, selector: table}
    off = space.inactive(values)
    return {name: value for name, value in values.items() if name not in off}


def bad_image(image: str | None) -> str | None:
    """Why a container image cannot reach an srun line as one image (None when it can)."""
    if image is not None and (not image.strip() or not image.isprintable() or "," in image):
        return f"container image {shown(image)} is empty or holds a newline, a control character or a ','"
    return None


def as_written(message: str, space: Space, field: str | None) -> str:
    """An unknown knob echoed as the TOML gave it (a whole range or list), not the one candidate validated."""
    if not message.startswith("unknown field (= ") or field not in space.names:
        return message
    dim = space.dim(field)
    if isinstance(dim, Categorical):
        return f"unknown field (= {toml_value(list(dim.choices))})"

    def number(value: float) -> float | int:
        return int(value) if float(value).is_integer() else value

    spec: dict[str, Any] = {"low": number(dim.low), "high": number(dim.high)}
    extras = {"log": dim.log, "dtype": dim.dtype, "grid_points": dim.grid_points}
    spec |= {key: value for key, value in extras.items() if value not in (False, None, "float")}
    return f"unknown field (= {toml_value(spec)})"


def nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    from cloudai.space import unflatten

    return unflatten(flat)
