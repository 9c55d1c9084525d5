"""The cells of a chunk of ``trajectory.csv`` read a column at once (``trajectory._clean_chunk``), each as
``parse_row`` reads it: JSON through ``json.loads``'s own C scanner, numbers through one ``float`` map; where a
column will not go at once, cell by cell, raising ``ValueError`` (or ``TypeError``) where ``parse_row`` would drop
the row."""

from __future__ import annotations

import itertools
import json
import math
import operator
from collections.abc import Callable, Sequence
from json.scanner import make_scanner
from operator import itemgetter
from typing import Any

from cloudai.recordfiles import parse_number

# Step.key: an action as compact JSON with sorted keys, as cloudai.trajectory.records writes it (so a row's own
# text is its key); ``default=str``: a value JSON cannot carry (a hand-built action) still gets a key.
COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
# COMPACT for what ``json.loads`` made (no cycle there to check for, no value it cannot carry): ~12% faster
CHECK = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False)
# json.loads's own scanner (C), without its per-call checks; typeshed types the decoder argument as the scanner
_scan = make_scanner(json.JSONDecoder())  # pyright: ignore[reportArgumentType]


def _json_value(text: str) -> Any:
    """``json.loads(text)``: the scanner alone when the text is one JSON value with nothing around it."""
    try:
        value, end = _scan(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)  # raises, or reads what the scanner left (surrounding whitespace)
    return value if end == len(text) else json.loads(text)


def json_cells(texts: Sequence[str]) -> list[Any]:
    """``json.loads`` of each text: the scanner over the column in one ``map`` when every text is one JSON value
    with nothing around it, else text by text (``_json_value``: ``ValueError`` for one that is not JSON)."""
    try:
        found = list(map(_scan, texts, itertools.repeat(0)))  # StopIteration (no JSON value) ends the map early
    except ValueError:
        return list(map(_json_value, texts))
    if len(found) < len(texts) or not all(map(operator.eq, map(len, texts), map(itemgetter(1), found))):
        return list(map(_json_value, texts))
    return list(map(itemgetter(0), found))


def action_cells(
    texts: Sequence[str], *, check: Callable[[str], None] | None = None
) -> tuple[list[Any], list[str] | None]:
    """``json.loads`` of each (distinct) action cell, and their keys (``action_key``) when that is each cell itself.

    Cells as cloudai writes them (each an object in ``COMPACT``'s text) are read as one JSON array: one scan in C,
    whose key strings are made once for the chunk, not once per cell. That is each cell's own reading when every
    cell is an object (``{`` ... ``}``), the text ``},{`` occurs only between cells, and the array re-encodes to its
    own text: then no whitespace stands outside a string, each boundary between items is a ``},{`` between cells,
    and the n items split the array where the n cells do. Any other chunk is read cell by cell (``json_cells``;
    keys None: the caller encodes them). ``check``: the re-encoding is left to it (it is given the joined array,
    for ``canonical_array`` elsewhere), for a caller that reads the chunk again when the array is not its own text."""
    joined = f"[{','.join(texts)}]"
    objects = all(map(str.startswith, texts, itertools.repeat("{"))) and all(
        map(str.endswith, texts, itertools.repeat("}"))
    )
    if objects and joined.count("},{") == len(texts) - 1:
        try:
            found = json.loads(joined)
        except (ValueError, RecursionError):
            found = None
        if found is not None and len(found) == len(texts) and (check is not None or CHECK.encode(found) == joined):
            if check is not None:
                check(joined)
            return found, list(texts)
    return json_cells(texts), None


def canonical_array(joined: str) -> bool:
    """Whether ``joined`` (a chunk's cells as one JSON array, ``action_cells``) re-encodes to its own text."""
    try:
        return CHECK.encode(json.loads(joined)) == joined
    except (ValueError, RecursionError):
        return False


def observation_cells(texts: Sequence[str]) -> list[list[float]]:
    """The observation cells as ``parse_row`` reads them (a list of floats, NaN for null; an empty cell: no
    values); ``ValueError`` or ``TypeError`` where it would not read one. Each distinct cell is read once: the
    steps of a repeated one share its (never modified) list (a workload's few outcomes, a cached step's)."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) == len(texts):
        return _observations(texts)
    return list(map(dict(zip(distinct, _observations(distinct), strict=True)).__getitem__, texts))


def _observations(texts: Sequence[str]) -> list[list[float]]:
    if not all(texts):
        return list(map(_observation, texts))
    values = json_cells(texts)
    if set(map(type, values)) != {list}:
        raise ValueError("an observation that is not a list")
    if set(map(type, itertools.chain.from_iterable(values))) <= {float}:
        return values  # float(v) of a float is v: the lists as parsed
    return [[math.nan if v is None else float(v) for v in row] for row in values]


def _observation(text: str) -> list[float]:
    """One observation cell as ``parse_row`` reads it; ``ValueError`` (or ``TypeError``) where it does not."""
    values = _json_value(text) if text else []
    if type(values) is not list:
        raise ValueError("not a list")
    return [math.nan if v is None else float(v) for v in values]


def number_cells(texts: Sequence[str]) -> list[float]:
    """``parse_number`` of each text (``float`` of the whole column first: its rare empty cells go one by one)."""
    try:
        return list(map(float, texts))
    except ValueError:
        return list(map(parse_number, texts))
