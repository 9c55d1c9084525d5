"""Box/Discrete-only algorithms: our action wrappers plus ``gymnasium.wrappers``, and a short training loop."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.wrappers import FlattenObservation
from tests.gym_adapter.knob_gym import KnobGym, StructuredKnobGym, mixed_space, score

from cloudai.errors import ConfigError
from cloudai.gym.adapter import GymnasiumAdapter
from cloudai.gym.flatten import GridActions, UnitBoxActions
from cloudai.space import Categorical, Range, Space


def test_unit_box_covers_every_choice_and_the_range_ends() -> None:
    adapter = GymnasiumAdapter(KnobGym(mixed_space()))
    env = UnitBoxActions(adapter)
    assert env.action_space == spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
    low = adapter.decode_action(env.action(np.full(4, -1.0)))
    high = adapter.decode_action(env.action(np.full(4, 1.0)))
    assert low == {"algo": "ring", "use_cuda": True, "chunk_kb": 64, "ratio": 0.0}
    assert high == {"algo": "nvls", "use_cuda": False, "chunk_kb": 8192, "ratio": 1.0}
    middle = adapter.decode_action(env.action(np.array([0.0, -0.5, 0.0, 0.0])))
    assert middle["algo"] == "tree" and middle["chunk_kb"] == round(math.sqrt(64 * 8192))


def test_grid_actions_enumerate_the_grid() -> None:
    space = mixed_space()
    adapter = GymnasiumAdapter(KnobGym(space))
    env = GridActions(adapter)
    assert env.action_space == spaces.Discrete(space.grid_size)
    seen = [adapter.decode_action(env.action(np.int64(i))) for i in range(space.grid_size)]
    assert seen == list(space.iter_grid())


def test_grid_actions_need_a_grid() -> None:
    space = Space({}, (Categorical("a", (1, 2)), Range("b", 0.0, 1.0)))
    with pytest.raises(ConfigError, match="finite grid"):
        GridActions(GymnasiumAdapter(KnobGym(space, fn=lambda p: 0.0)))


@pytest.mark.parametrize("wrapper", [UnitBoxActions, GridActions])
def test_flattened_envs_are_box_and_discrete_only(wrapper: Any) -> None:
    env = FlattenObservation(wrapper(GymnasiumAdapter(StructuredKnobGym(mixed_space(), live=True, horizon=3))))
    assert isinstance(env.observation_space, spaces.Box)
    assert isinstance(env.action_space, spaces.Box | spaces.Discrete)
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    for _ in range(10):
        assert env.observation_space.contains(obs)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()


def epsilon_greedy(env: Any, steps: int, epsilon: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A library-free tabular bandit: sample means per discrete action, epsilon-greedy."""
    rng = np.random.default_rng(seed)
    n = env.action_space.n
    totals, counts = np.zeros(n), np.zeros(n)
    env.reset(seed=seed)
    for _ in range(steps):
        untried = np.flatnonzero(counts == 0)
        if untried.size:
            action = int(untried[0])
        elif rng.random() < epsilon:
            action = int(rng.integers(n))
        else:
            action = int(np.argmax(totals / counts))
        _, reward, terminated, truncated, _ = env.step(np.int64(action))
        totals[action] += reward
        counts[action] += 1
        if terminated or truncated:
            env.reset()
    return totals, counts


def test_tabular_policy_learns_the_best_point_through_wrappers() -> None:
    space = mixed_space()
    gym = StructuredKnobGym(space, live=True, horizon=7)
    env = FlattenObservation(GridActions(GymnasiumAdapter(gym, max_steps=10)))
    totals, counts = epsilon_greedy(env, steps=space.grid_size + 60, epsilon=0.1, seed=3)
    best = int(np.argmax(totals / np.maximum(counts, 1)))
    expected = max(range(space.grid_size), key=lambda i: score(space.grid_point(i)))
    assert best == expected
    assert counts[best] > counts.sum() / space.grid_size  # exploited, not only explored
    assert [r["step"] for r in gym.rows] == list(range(1, space.grid_size + 61))
    assert gym.episode > 1  # episodes ended (done at horizon) and were reset
