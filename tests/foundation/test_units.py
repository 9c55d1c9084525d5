"""Pure pieces: time limits, the lazy grid, the registry."""

from __future__ import annotations

import pytest

from cloudai.config.timelimit import format_time_limit, parse_time_limit
from cloudai.errors import ConfigError
from cloudai.registry import Registry
from cloudai.space import Categorical, Range, flatten, parse_space, unflatten


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800),
        (30, 1800),
        ("1:30", 90),
        ("01:00:00", 3600),
        ("2-00", 172800),
        ("1-02:03", 93780),
        ("1-00:00:05", 86405),
    ],
)
def test_time_limit_formats(text: str | int, seconds: int) -> None:
    assert parse_time_limit(text) == seconds


@pytest.mark.parametrize("text", ["", "1h", "00:00:00", "1:2:3:4", "-5"])
def test_bad_time_limits(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time_limit(text)


def test_time_limit_round_trip() -> None:
    for seconds in (1, 59, 3600, 86399, 90061):
        assert parse_time_limit(format_time_limit(seconds)) == seconds


def test_grid_is_lazy_and_index_round_trips() -> None:
    space = parse_space({f"k{i}": list(range(10)) for i in range(9)})
    assert space.grid_size == 10**9
    point = space.grid_point(123_456_789)
    assert point == {f"k{i}": (i + 1) % 10 for i in range(9)}
    assert space.grid_index(point) == 123_456_789


def test_grid_index_finds_each_choice_as_a_scan_would() -> None:
    """A choice's position comes from a table (a 10^5-choice knob is not scanned at every step), with the
    scan's answers: the first of equal choices, unhashable choices (nested lists) and a miss's ValueError."""
    grid = {"low": 0, "high": 1, "grid_points": 5}
    space = parse_space({"k": list(range(100_000)), "n": [[1, 2], 3, 3.0, [4]], "r": grid})
    choices = space.dims[1].grid_values
    for value in ([1, 2], 3, 3.0, [4]):
        assert space.dims[1].position(value) == list(choices).index(value)
    assert space.dims[1].position(3.0) == 1  # 3 == 3.0: the first, as list.index says
    assert space.grid_index({"k": 99_999, "n": [4], "r": 0.75}) == (99_999 * 4 + 3) * 5 + 3
    for missing in ({"k": 100_000, "n": 3, "r": 0.0}, {"k": 0, "n": [5], "r": 0.0}, {"k": 0, "n": 3, "r": 0.3}):
        with pytest.raises(ValueError):
            space.grid_index(missing)


def test_space_classifies_values() -> None:
    space = parse_space(
        flatten(
            {
                "a": [1, 2],
                "b": {"low": 1, "high": 64, "log": True, "dtype": "int", "grid_points": 7},
                "c": 3,
                "n": {"x": ["p", "q"]},
            }
        )
    )
    assert space.fixed == {"c": 3}
    assert space.dims[0] == Categorical("a", (1, 2))
    assert isinstance(space.dims[1], Range)
    assert space.dims[1].grid_values == (1, 2, 4, 8, 16, 32, 64)
    assert space.names == ("a", "b", "n.x")
    assert unflatten(space.full(space.grid_point(0))) == {"a": 1, "b": 1, "c": 3, "n": {"x": "p"}}


def test_range_without_grid_points_has_no_grid() -> None:
    space = parse_space({"x": {"low": 0.0, "high": 1.0}})
    assert not space.has_grid
    with pytest.raises(ConfigError, match="grid_points"):
        _ = space.grid_size


def test_registry_hints_and_lazy_import() -> None:
    registry: Registry[object] = Registry("thing", "cloudai.nothing", {"json_dumps": "json:dumps"})
    import json

    assert registry.get("json_dumps") is json.dumps
    with pytest.raises(ConfigError, match="did you mean 'json_dumps'"):
        registry.get("json_dump")
