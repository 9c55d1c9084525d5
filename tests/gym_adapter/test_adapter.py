"""``GymnasiumAdapter`` over an in-process ``BaseGym``: spaces, codec, episodes, Gymnasium's checker."""

from __future__ import annotations

import math
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.gym_adapter.knob_gym import KnobGym, StructuredKnobGym, discrete_space, mixed_space

from cloudai.errors import ConfigError
from cloudai.gym.adapter import GymnasiumAdapter
from cloudai.space import Categorical, Range, Space


def spec_make(env: KnobGym, **kwargs: Any) -> gymnasium.Env:
    """Through ``gymnasium.make`` with the same spec flags ``cloudai/Test-v0`` is registered with."""
    spec = EnvSpec("cloudai-test/Knob-v0", entry_point="cloudai.gym.adapter:GymnasiumAdapter", nondeterministic=True)
    return gymnasium.make(spec, env=env, **kwargs)


@pytest.mark.parametrize(
    "gym",
    [KnobGym(discrete_space()), KnobGym(mixed_space()), StructuredKnobGym(mixed_space(), live=True)],
    ids=["discrete", "mixed", "structured-live"],
)
def test_check_env_passes(gym: KnobGym) -> None:
    env = spec_make(gym)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_check_env_passes_on_a_deterministic_env_without_spec() -> None:
    """Even the step-determinism check passes when info is reproducible (no step counter in it)."""

    class Quiet(KnobGym):
        def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
            observation, reward, done, _ = super().step(action)
            return observation, reward, done, {"status": "ok"}

    check_env(GymnasiumAdapter(Quiet(mixed_space())), skip_render_check=True)


def test_spaces() -> None:
    adapter = GymnasiumAdapter(KnobGym(mixed_space()))
    assert isinstance(adapter.action_space, spaces.Dict)
    assert adapter.action_space["algo"] == spaces.Discrete(3)
    assert adapter.action_space["use_cuda"] == spaces.Discrete(2)
    box = adapter.action_space["chunk_kb"]
    assert isinstance(box, spaces.Box) and box.low[0] == 64 and box.high[0] == 8192
    assert "fixed_flag" not in adapter.action_space.spaces
    assert adapter.observation_space == spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
    assert adapter.render_mode is None
    structured = GymnasiumAdapter(StructuredKnobGym(mixed_space()))
    assert isinstance(structured.observation_space, spaces.Dict)
    assert structured.observation_space["mode"] == spaces.Discrete(3)
    assert structured.observation_space["load"] == spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def test_round_trip_every_grid_point() -> None:
    space = mixed_space()
    adapter = GymnasiumAdapter(KnobGym(space))
    for point in space.iter_grid():
        action = adapter.encode_action(point)
        assert adapter.action_space.contains(action)
        decoded = adapter.decode_action(action)
        assert all(_same(decoded[k], point[k]) for k in point), (point, decoded)


@settings(max_examples=200, deadline=None)
@given(
    algo=st.sampled_from(["ring", "tree", "nvls"]),
    cuda=st.booleans(),
    chunk=st.integers(64, 8192),
    ratio=st.floats(0.0, 1.0, allow_nan=False),
)
def test_round_trip_random_range_points(algo: str, cuda: bool, chunk: int, ratio: float) -> None:
    adapter = GymnasiumAdapter(KnobGym(mixed_space()))
    point = {"algo": algo, "use_cuda": cuda, "chunk_kb": chunk, "ratio": ratio}
    action = adapter.encode_action(point)
    assert adapter.action_space.contains(action)
    decoded = adapter.decode_action(action)
    assert all(_same(decoded[k], point[k]) for k in point)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_decode_of_any_sample_is_in_the_space(seed: int) -> None:
    """Int ranges are quantized (rounded, clamped); a discrete index survives decode -> encode."""
    adapter = GymnasiumAdapter(KnobGym(mixed_space()))
    adapter.action_space.seed(seed)
    sample = adapter.action_space.sample()
    point = adapter.decode_action(sample)
    assert isinstance(point["chunk_kb"], int) and 64 <= point["chunk_kb"] <= 8192
    assert point["chunk_kb"] == min(max(round(float(sample["chunk_kb"][0])), 64), 8192)
    again = adapter.encode_action(point)
    assert again["algo"] == sample["algo"] and again["use_cuda"] == sample["use_cuda"]
    assert again["ratio"][0] == sample["ratio"][0]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"algo": "mesh", "use_cuda": True, "chunk_kb": 64, "ratio": 0.1}, "'mesh' is not a candidate of 'algo'"),
        ({"algo": "ring", "use_cuda": 1, "chunk_kb": 64, "ratio": 0.1}, "1 is not a candidate of 'use_cuda'"),
        ({"algo": "ring", "use_cuda": True, "chunk_kb": 63, "ratio": 0.1}, "outside 'chunk_kb'"),
        ({"algo": "ring", "use_cuda": True, "chunk_kb": 64.5, "ratio": 0.1}, "not an integer"),
        ({"algo": "ring", "use_cuda": True, "chunk_kb": 64, "ratio": math.nan}, "outside 'ratio'"),
        ({"algo": "ring", "use_cuda": True, "chunk_kb": 64}, "missing knob(s) ['ratio']"),
        ({"algo": "ring", "use_cuda": True, "chunk_kb": 64, "ratio": 0.1, "x": 1}, "unknown knob(s) ['x']"),
        ({"algo": "ring", "use_cuda": True, "chunk_kb": 64, "ratio": 0.1, "fixed_flag": "off"}, "fixed by the test"),
    ],
)
def test_encode_rejects_values_outside_the_space(values: dict[str, Any], message: str) -> None:
    adapter = GymnasiumAdapter(KnobGym(mixed_space()))
    with pytest.raises(ConfigError) as caught:
        adapter.encode_action(values)
    assert message in str(caught.value)


def test_candidates_are_named_in_the_error() -> None:
    adapter = GymnasiumAdapter(KnobGym(mixed_space()))
    with pytest.raises(ConfigError, match="candidates: 'ring', 'tree', 'nvls'"):
        adapter.encode_action({"algo": "mesh", "use_cuda": True, "chunk_kb": 64, "ratio": 0.1})


def test_step_passes_knob_values_and_reports_every_knob() -> None:
    gym = KnobGym(mixed_space())
    adapter = GymnasiumAdapter(gym)
    adapter.reset(seed=1)
    point = {"algo": "tree", "use_cuda": False, "chunk_kb": 128, "ratio": 0.25}
    obs, reward, terminated, truncated, info = adapter.step(adapter.encode_action(point))
    assert gym.rows[-1]["action"] == point
    ours = info["cloudai"]
    assert ours["knobs"] == {**point, "fixed_flag": "on", "num_nodes": 1}
    assert ours["step"] == 1 and ours["status"] == "ok" and set(info) == {"cloudai"}
    assert obs.dtype == np.float32 and obs[0] == np.float32(reward)
    assert (terminated, truncated) == (False, False)
    assert adapter.cloudai_env is gym


def test_truncates_at_max_steps_and_leaves_the_step_counter_to_the_env() -> None:
    gym = KnobGym(discrete_space())
    adapter = GymnasiumAdapter(gym, max_steps=3)
    flags = []
    for _ in range(2):
        adapter.reset()
        for _ in range(3):
            _, _, terminated, truncated, _ = adapter.step(adapter.action_space.sample())
            flags.append((terminated, truncated))
    assert flags == [(False, False), (False, False), (False, True)] * 2
    assert [r["step"] for r in gym.rows] == [1, 2, 3, 4, 5, 6]
    assert gym.next_step == 7


def test_live_done_terminates_offline_done_does_not() -> None:
    live = GymnasiumAdapter(KnobGym(discrete_space(), live=True, horizon=2))
    live.reset()
    assert [live.step(live.action_space.sample())[2] for _ in range(2)] == [False, True]

    class Offline(KnobGym):
        def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
            observation, reward, _, info = super().step(action)
            return observation, reward, True, info  # e.g. a constraint step: never ends a sweep

    offline = GymnasiumAdapter(Offline(discrete_space()))
    offline.reset()
    assert offline.step(offline.action_space.sample())[2] is False


def test_structured_observation_and_nan() -> None:
    gym = StructuredKnobGym(mixed_space(), fn=lambda point: math.nan)
    adapter = GymnasiumAdapter(gym)
    adapter.reset()
    obs, *_ = adapter.step(adapter.action_space.sample())
    assert adapter.observation_space.contains(obs)
    assert obs["value"][0] == 0.0 and obs["mode"] == 1


def test_close_closes_the_env() -> None:
    gym = KnobGym(discrete_space())
    GymnasiumAdapter(gym).close()
    assert gym.closed == 1


def test_categorical_bool_and_int_choices_stay_apart() -> None:
    space = Space({}, (Categorical("x", (1, True, 1.5)), Range("y", -1.0, 1.0)))
    adapter = GymnasiumAdapter(KnobGym(space, fn=lambda p: 0.0))
    for value, index in ((1, 0), (True, 1), (1.5, 2)):
        assert adapter.encode_action({"x": value, "y": 0.0})["x"] == index
