"""How values read to a person: floats without their binary noise, actions as compact JSON, defaults as TOML.

``0.1 * 6`` is ``0.6000000000000001`` in binary floating point; a user reads that as a different value
from the ``0.6`` they wrote. ``show_float`` rounds to ``DIGITS`` significant digits and prints the
shortest text that reads back as that rounded float (``repr``), so ``0.6`` reads ``0.6`` and ``1e-07``
stays exact to 12 digits. Display only: the recorded files (trajectory.csv, confirm.csv, best.toml's
values) keep every bit.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

DIGITS = 12  # well beyond any knob a user types, well short of float noise (~16-17 digits)


def show_float(value: float) -> str:
    """``0.6000000000000001`` -> ``0.6``; ``3.0`` -> ``3.0``; nan and infinities as Python writes them."""
    return repr(clean(value))


def clean(value: Any) -> Any:
    """``value`` with every float (also inside lists and dicts) rounded as ``show_float`` shows it."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, Mapping):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def show_action(action: Mapping[str, Any], *, sort_keys: bool = False) -> str:
    """An action as JSON for a person: ``{"lr": 0.6}``, not ``{"lr": 0.6000000000000001}``."""
    return json.dumps(clean(action), sort_keys=sort_keys, default=str)


def show_value(value: Any) -> str:
    """One knob value as ``key=value`` text shows it (``repr`` for strings, floats without noise)."""
    return show_float(value) if isinstance(value, float) else repr(clean(value))


def toml_text(value: object) -> str:
    """A default as TOML text: strings quoted, booleans lowercase, a model as an inline table of its set fields."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return show_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Enum):
        return toml_text(value.value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    # A model exists only once pydantic is imported: the reports, which never import it, need not import it here.
    model: type[BaseModel] | None = getattr(sys.modules.get("pydantic"), "BaseModel", None)
    if model is not None and isinstance(value, model):
        value = {
            info.alias or k: v for k, info in type(value).model_fields.items() if (v := getattr(value, k)) is not None
        }
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {toml_text(v)}" for k, v in value.items())
        return f"{{ {inner} }}" if inner else "{}"
    if isinstance(value, list | tuple | set | frozenset):
        return "[" + ", ".join(toml_text(v) for v in value) + "]"
    return str(value)
