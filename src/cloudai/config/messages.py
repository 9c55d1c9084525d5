"""Pydantic's errors in a user's words: the value given, the accepted forms, a did-you-mean.

Pydantic says "Input should be a valid integer" for ``seconds = {min = 1, max = 4}`` and "Input
should be 'start_post_init', 'start_post_comp' or 'end_post_comp'" without the value that was
wrong. ``explain`` turns the errors of one field (a union gives several) into one message that
echoes the value as TOML, says what is accepted, and suggests the closest accepted spelling.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

MAX_SHOWN = 80
# pydantic error type prefix -> what the field accepts
_EXPECTED = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "str": "a string",
    "list": "a list",
    "dict": "a table",
    "model": "a table",
    "model_attributes": "a table",
    "tuple": "a list",
    "set": "a list",
}
_RANGE_SYNONYMS = {"min": "low", "max": "high", "lo": "low", "hi": "high", "from": "low", "to": "high"}


def toml_value(value: Any) -> str:
    """``value`` as it would be written in TOML (strings quoted, tables inline), cut to ``MAX_SHOWN``."""
    text = _toml(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def explain(errors: Sequence[Mapping[str, Any]], field: str) -> tuple[str, str | None]:
    """(message, hint) for the pydantic ``errors`` of one field (several when the field is a union)."""
    first = errors[0]
    value = first.get("input")
    shown = toml_value(value)
    choices = [c for err in errors for c in _choices(err)]
    if choices:
        listed = ", ".join(toml_value(c) for c in choices)
        return f"{shown} is not one of {listed}", _closest(value, choices, listed)
    expected = list(dict.fromkeys(e for err in errors if (e := _expected(err)) is not None))
    if expected and len(expected) == len(errors):
        accepted = " or ".join(expected)
        return f"{shown} is not {accepted}", _shape_hint(value, field, accepted)
    message = "; ".join(
        dict.fromkeys(str(err["msg"]).removeprefix("Value error, ") for err in errors if _expected(err) is None)
    )
    return f"{message} (given {shown})", None


def _choices(err: Mapping[str, Any]) -> list[Any]:
    if err.get("type") not in ("literal_error", "enum"):
        return []
    expected = str((err.get("ctx") or {}).get("expected", ""))
    return re.findall(r"'([^']*)'", expected)


def _expected(err: Mapping[str, Any]) -> str | None:
    kind = str(err.get("type", ""))
    for prefix, words in _EXPECTED.items():
        if kind in (f"{prefix}_type", f"{prefix}_parsing", f"{prefix}_from_float"):
            return words
    return None


def _closest(value: Any, choices: list[Any], listed: str) -> str:
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.4)
    return f"did you mean {toml_value(close[0])}?" if close else f"use one of {listed}"


def _shape_hint(value: Any, field: str, accepted: str) -> str:
    """What to write instead; a ``{min, max}`` table on a knob is read as the range it meant."""
    knob = field.startswith("cmd_args.") or ".cmd_args." in field
    if isinstance(value, Mapping) and knob:
        renamed = {_RANGE_SYNONYMS.get(str(k), str(k)): v for k, v in value.items()}
        if {"low", "high"} <= set(renamed):
            meant = toml_value({"low": renamed["low"], "high": renamed["high"]})
            return f"did you mean the range {meant}? (a range is {{low, high}}, optional log, dtype, grid_points)"
    if knob:
        return f"give {accepted}, a list of candidates [a, b], or a range {{low = .., high = ..}}"
    return f"give {accepted}"
