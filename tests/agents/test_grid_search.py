from __future__ import annotations

from typing import Any

import pytest

from cloudai.agents.grid_search import GridSearchAgent
from cloudai.errors import ConfigError
from cloudai.space import Categorical, Range, Space


def count(point: dict[str, Any]) -> float:
    return float(point["a"])


def test_sweeps_the_whole_grid_in_order_then_stops(make_gym: Any, make_agent: Any, grid_space: Space) -> None:
    env = make_gym(grid_space, count)
    done = make_agent(GridSearchAgent, env, max_steps=100).run()
    assert done == 12
    assert env.asked == [grid_space.grid_point(i) for i in range(12)]


def test_max_steps_caps_the_sweep(make_gym: Any, make_agent: Any, grid_space: Space) -> None:
    env = make_gym(grid_space, count)
    assert make_agent(GridSearchAgent, env, max_steps=5).run() == 5
    assert env.asked == list(grid_space.iter_grid())[:5]


def test_select_action_tags_the_env_next_step_and_returns_none_when_exhausted(make_gym: Any, make_agent: Any) -> None:
    env = make_gym(Space({}, (Categorical("a", (1, 2)),)), count)
    agent = make_agent(GridSearchAgent, env, max_steps=10)
    assert agent.select_action([0.0]) == (1, {"a": 1})
    env.step({"a": 1})
    assert agent.select_action([0.0]) == (2, {"a": 2})
    env.step({"a": 2})
    assert agent.select_action([0.0]) is None


def test_range_without_grid_points_is_a_config_error(make_gym: Any, make_agent: Any) -> None:
    env = make_gym(Space({}, (Range("x", 0.0, 1.0),)), count)
    with pytest.raises(ConfigError, match="grid_points"):
        make_agent(GridSearchAgent, env, max_steps=10)


def test_range_with_grid_points_joins_the_grid(make_gym: Any, make_agent: Any) -> None:
    space = Space({}, (Categorical("a", (1, 2)), Range("x", 1.0, 100.0, log=True, grid_points=3)))
    env = make_gym(space, count)
    assert make_agent(GridSearchAgent, env, max_steps=100).run() == 6
    assert [p["x"] for p in env.asked[:3]] == pytest.approx([1.0, 10.0, 100.0])


def test_resume_continues_after_the_recorded_points(make_gym: Any, make_agent: Any, grid_space: Space) -> None:
    first = make_gym(grid_space, count)
    make_agent(GridSearchAgent, first, max_steps=5).run()
    resumed = make_gym(grid_space, count, history=sorted(first.feedback, key=lambda f: f.step))
    assert make_agent(GridSearchAgent, resumed, max_steps=100).run() == 12
    assert resumed.asked == [grid_space.grid_point(i) for i in range(5, 12)]


def test_resume_fills_gaps_left_by_unfinished_parallel_trials(
    make_gym: Any, make_agent: Any, grid_space: Space
) -> None:
    first = make_gym(grid_space, count)
    make_agent(GridSearchAgent, first, max_steps=5).run()
    recorded = [f for f in sorted(first.feedback, key=lambda f: f.step) if f.step != 3]  # step 3 never finished
    resumed = make_gym(grid_space, count, history=recorded)
    make_agent(GridSearchAgent, resumed, max_steps=12).run()
    assert resumed.asked == [grid_space.grid_point(i) for i in (2, *range(5, 12))]


def test_parallel_asks_keep_grid_order(make_gym: Any, make_agent: Any, grid_space: Space) -> None:
    env = make_gym(grid_space, count, max_in_flight=4)
    assert make_agent(GridSearchAgent, env, max_steps=100, max_parallel=4).run() == 12
    assert env.most_in_flight == 4
    assert env.asked == list(grid_space.iter_grid())


def test_huge_grid_is_never_materialised(make_gym: Any, make_agent: Any) -> None:
    space = Space({}, tuple(Categorical(f"d{i}", tuple(range(10))) for i in range(12)))  # 10^12 points
    env = make_gym(space, lambda p: 0.0)
    assert make_agent(GridSearchAgent, env, max_steps=3).run() == 3
    assert env.asked[-1] == {**{f"d{i}": 0 for i in range(12)}, "d11": 2}


def test_grid_search_does_not_sample_env_params() -> None:
    assert GridSearchAgent.samples_env_params is False
    assert GridSearchAgent.name == "grid_search"
