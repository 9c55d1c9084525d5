from __future__ import annotations

import statistics
from typing import Any

import pytest

from cloudai.agents.random_search import FeistelPermutation, RandomSearchAgent
from cloudai.space import Categorical, Range, Space


def zero(point: dict[str, Any]) -> float:
    return 0.0


@pytest.mark.parametrize("n", [*range(1, 70), 1000, 4097])
def test_feistel_permutation_is_a_bijection(n: int) -> None:
    perm = FeistelPermutation(n, [11, 22, 33, 44, 55, 66])
    assert sorted(perm(i) for i in range(n)) == list(range(n))


def test_finite_grid_every_point_exactly_once_then_none(make_gym: Any, make_agent: Any, grid_space: Space) -> None:
    env = make_gym(grid_space, zero)
    agent = make_agent(RandomSearchAgent, env, max_steps=100, seed=3)
    assert agent.run() == 12
    indices = [grid_space.grid_index(p) for p in env.asked]
    assert sorted(indices) == list(range(12))
    assert indices != list(range(12))  # shuffled, not the grid order
    assert agent.select_action([0.0]) is None


def test_same_seed_same_sequence_other_seed_other_sequence(
    make_gym: Any, make_agent: Any, grid_space: Space, smooth_space: Space
) -> None:
    def asked(space: Space, seed: int) -> list[dict[str, Any]]:
        env = make_gym(space, zero)
        make_agent(RandomSearchAgent, env, max_steps=10, seed=seed).run()
        return env.asked

    for space in (grid_space, smooth_space):
        assert asked(space, 7) == asked(space, 7)
        assert asked(space, 7) != asked(space, 8)


def test_huge_grid_samples_without_replacement_lazily(make_gym: Any, make_agent: Any) -> None:
    space = Space({}, tuple(Categorical(f"d{i}", tuple(range(10))) for i in range(9)))  # 10^9 points
    env = make_gym(space, zero)
    assert make_agent(RandomSearchAgent, env, max_steps=2000, seed=0).run() == 2000
    indices = {space.grid_index(p) for p in env.asked}
    assert len(indices) == 2000
    assert max(indices) > 10**8  # spread over the grid, not its first corner


def test_ranges_uniform_log_uniform_and_int(make_gym: Any, make_agent: Any) -> None:
    space = Space(
        {},
        (
            Categorical("c", ("p", "q")),
            Range("u", -1.0, 1.0),
            Range("g", 1.0, 10_000.0, log=True),
            Range("n", 2, 9, dtype="int", grid_points=2),  # grid_points only matters to grid_search
        ),
    )
    env = make_gym(space, zero)
    make_agent(RandomSearchAgent, env, max_steps=2000, seed=0).run()
    us, gs, ns = ([p[k] for p in env.asked] for k in ("u", "g", "n"))
    assert all(-1.0 <= u <= 1.0 for u in us) and abs(statistics.mean(us)) < 0.1
    assert all(1.0 <= g <= 10_000.0 for g in gs) and 30 < statistics.median(gs) < 300  # geometric middle: 100
    assert all(isinstance(n, int) for n in ns) and set(ns) == set(range(2, 10))
    assert {p["c"] for p in env.asked} == {"p", "q"}


def test_small_int_space_is_exhausted_not_repeated(make_gym: Any, make_agent: Any) -> None:
    env = make_gym(Space({}, (Range("n", 1, 4, dtype="int"),)), zero)
    assert make_agent(RandomSearchAgent, env, max_steps=50, seed=0).run() == 4
    assert sorted(p["n"] for p in env.asked) == [1, 2, 3, 4]


@pytest.mark.parametrize("second_seed", [5, 6])
def test_resumed_steps_count_as_seen(make_gym: Any, make_agent: Any, grid_space: Space, second_seed: int) -> None:
    first = make_gym(grid_space, zero)
    make_agent(RandomSearchAgent, first, max_steps=5, seed=5).run()
    resumed = make_gym(grid_space, zero, history=sorted(first.feedback, key=lambda f: f.step))
    assert make_agent(RandomSearchAgent, resumed, max_steps=100, seed=second_seed).run() == 12
    before = {grid_space.grid_index(p) for p in first.asked}
    after = [grid_space.grid_index(p) for p in resumed.asked]
    assert len(after) == 7 and before.isdisjoint(after) and before | set(after) == set(range(12))


def test_parallel_asks_in_flight(make_gym: Any, make_agent: Any, grid_space: Space) -> None:
    env = make_gym(grid_space, zero, max_in_flight=4)
    assert make_agent(RandomSearchAgent, env, max_steps=10, max_parallel=4, seed=1).run() == 10
    assert env.most_in_flight == 4
    assert len({grid_space.grid_index(p) for p in env.asked}) == 10


def test_random_search_samples_env_params() -> None:
    assert RandomSearchAgent.samples_env_params is True
    assert RandomSearchAgent.name == "random_search"


def _randomized(make_gym: Any, space: Space, **kwargs: Any) -> Any:
    """A FunctionGym whose environment samples env_params (a sampler over a knob outside the action space)."""
    from cloudai.config.test import EnvParamSpec
    from cloudai.envs.env_params import EnvParamSampler

    sampler = EnvParamSampler({"load": EnvParamSpec()}, Space({}, (Categorical("load", (0, 1)),)), 0)
    env = make_gym(space, zero, **kwargs)
    env.env_param_sampler = lambda: sampler
    return env


def test_with_env_params_each_pass_tries_every_point_once(make_gym: Any, make_agent: Any, grid_space: Space) -> None:
    """The same point under another environment is a new trial: 30 steps are 2.5 passes of the 12 points."""
    env = _randomized(make_gym, grid_space)
    assert make_agent(RandomSearchAgent, env, max_steps=30, seed=2).run() == 30
    passes = [[grid_space.grid_index(p) for p in env.asked[i : i + 12]] for i in (0, 12)]
    assert sorted(passes[0]) == sorted(passes[1]) == list(range(12))
    assert passes[0] != passes[1]  # a fresh permutation per pass
    assert len({grid_space.grid_index(p) for p in env.asked[24:]}) == 6


def test_with_env_params_resume_continues_the_pass(make_gym: Any, make_agent: Any, grid_space: Space) -> None:
    first = _randomized(make_gym, grid_space)
    make_agent(RandomSearchAgent, first, max_steps=17, seed=4).run()
    history = sorted(first.feedback, key=lambda f: f.step)
    resumed = _randomized(make_gym, grid_space, history=history)
    assert make_agent(RandomSearchAgent, resumed, max_steps=24, seed=4).run() == 24
    second_pass = [grid_space.grid_index(p) for p in [*first.asked[12:], *resumed.asked]]
    assert sorted(second_pass) == list(range(12))  # the 7 not yet tried in pass 2, none twice
