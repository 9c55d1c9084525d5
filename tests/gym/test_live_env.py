"""``LiveGymEnv`` in this process (built from TOML by ``load_env``), and the ``GymServer`` contract of our servers."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from tests.gym.live_envs import EchoEnv, FailingSim

from cloudai.envs.live import LiveGymEnv
from cloudai.errors import GymServerError
from cloudai.gym.examples import ServingSim
from cloudai.gym.from_toml import load_env
from cloudai.gym.registration import ENV_ID, register_envs
from cloudai.gymserver.protocol import GymServer
from cloudai.gymserver.spaces import ContinuousSpace


def write(root: Path, agent: str, cmd_args: str) -> tuple[Path, Path]:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "tests" / "t.toml").write_text(
        f'name = "t"\ntest_template_name = "LiveRL"\nagent_steps = 20\n{agent}'
        f"[cmd_args]\nlive_rl_mode = true\n{cmd_args}"
    )
    (root / "scenario.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    return root / "tests", root / "scenario.toml"


def echo_env(root: Path, extra: str = "") -> LiveGymEnv:
    tests, scenario = write(root, 'agent = "random_search"\n', f'env_class = "tests.gym.live_envs.EchoEnv"\n{extra}')
    env = load_env(tests, scenario, output_dir=root / "out").env
    assert isinstance(env, LiveGymEnv)
    return env


def first_action(server: GymServer) -> dict[str, Any]:
    return {n: s.low if isinstance(s, ContinuousSpace) else s[0] for n, s in server.action_space().items()}


@pytest.mark.parametrize("make_server", [ServingSim, EchoEnv], ids=["ServingSim", "EchoEnv"])
def test_gym_server_contract(make_server: Any) -> None:
    server = make_server()
    assert isinstance(server, GymServer)
    space, names = server.action_space(), server.observation_space()
    assert space and all(isinstance(s, ContinuousSpace) or (isinstance(s, list) and s) for s in space.values())
    assert names and all(isinstance(n, str) for n in names)
    action = first_action(server)

    def episode(seed: int) -> list[list[float]]:
        observation, info = server.reset(seed=seed, options=None)
        assert len(observation) == len(names) and isinstance(info, dict)
        seen = []
        for _ in range(1000):
            observation, reward, done, info = server.step(action)
            assert len(observation) == len(names) and isinstance(info, dict)
            assert isinstance(reward, float) and isinstance(done, bool)
            seen.append(observation)
            if done:
                return seen
        raise AssertionError("no done within 1000 steps")

    assert episode(5) == episode(5)  # same seed, same actions: same episode


def test_step_after_done_without_reset_starts_the_next_episode(tmp_path: Path) -> None:
    env = echo_env(tmp_path, "every = 2\n")
    action = {"x": 1, "y": 0.5, "z": 0}
    results = [env.step(action) for _ in range(3)]
    assert [done for _, _, done, _ in results] == [False, True, False]
    assert [info["episode"] for *_, info in results] == [1, 1, 2]
    assert [observation[2] for observation, *_ in results] == [1.0, 2.0, 1.0]  # t: the server was reset
    assert env.next_step == 4
    env.close()
    env.close()  # safe twice


def test_reset_twice_keeps_the_episode_number(tmp_path: Path) -> None:
    env = echo_env(tmp_path)
    assert env.reset(seed=1)[1]["episode"] == 1
    assert env.reset(seed=2)[1]["episode"] == 1  # no step in between: still the first episode
    assert env.step({"x": 0, "y": 0.0, "z": 1})[3]["episode"] == 1
    assert env.reset()[1]["episode"] == 2
    env.close()


def test_a_peek_at_env_params_sees_the_values_in_force(tmp_path: Path) -> None:
    env = echo_env(tmp_path, "every = 4\nload_scale = { low = 0.1, high = 9.9 }\n[env_params.load_scale]\n")
    sampler = env.env_param_sampler()
    base = env.setup.sampler
    assert sampler is not None and base is not None and sampler.names == ["load_scale"]
    env.reset(seed=0)
    in_force = base.sample(1)
    for step in range(1, 5):
        assert sampler.sample(step) == in_force  # what the agent peeks is what the step will run under
        _, _, done, info = env.step({"x": 2, "y": 0.1, "z": 0})
        assert info["env_params"] == in_force and done == (step == 4)
    assert sampler.sample(5) == base.sample(5) != in_force  # after done: the next episode's draw
    assert sampler.regime(sampler.sample(5), 3) == base.regime(base.sample(5), 3)
    env.reset()
    assert env.step({"x": 2, "y": 0.1, "z": 0})[0][0] == base.sample(5)["load_scale"]  # reached the server
    env.close()
    with (env.setup.out_dir / "env.csv").open() as fh:
        assert [float(r["load_scale"]) for r in csv.DictReader(fh)] == [in_force["load_scale"]] * 4 + [
            base.sample(5)["load_scale"]
        ]


def test_an_in_process_crash_is_a_gym_server_error_after_the_recorded_steps(tmp_path: Path) -> None:
    marker = tmp_path / "fail"
    marker.touch()
    cmd_args = f'env_class = "tests.gym.live_envs.FailingSim"\nfail_file = "{marker}"\nfail_after = 2\n'
    tests, scenario = write(tmp_path, 'agent = "random_search"\n', cmd_args)
    env = load_env(tests, scenario, output_dir=tmp_path / "out").env
    action = first_action(FailingSim())
    env.reset(seed=0)
    env.step(action)
    env.step(action)
    with pytest.raises(GymServerError, match="injected crash") as raised:
        env.step(action)
    assert raised.value.call == "step" and raised.value.where == "tests.gym.live_envs.FailingSim"
    env.close()
    with (env.setup.out_dir / "trajectory.csv").open() as fh:
        assert [r["step"] for r in csv.DictReader(fh)] == ["1", "2"]


def test_null_reward_is_a_failed_step_with_the_penalty(tmp_path: Path) -> None:
    env = echo_env(tmp_path)

    def nan_step(action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        return [1.0, 0.0, 1.0, 0.0, 0.0], math.nan, False, {"reward_null": True}

    env.server.step = nan_step  # type: ignore[method-assign]
    _, reward, _, info = env.step({"x": 0, "y": 0.0, "z": 0})
    assert info["status"] == "failed" and reward == env.setup.penalty_reward and info["reward_null"]
    env.close()


def test_gymnasium_checker_passes_over_live_servingsim(tmp_path: Path) -> None:
    register_envs()
    tests, scenario = write(tmp_path, 'agent = "random_search"\n', 'env_class = "cloudai.gym.examples.ServingSim"\n')
    adapter = gymnasium.make(ENV_ID, tests_dir=tests, scenario=scenario, output_dir=tmp_path / "out").unwrapped
    check_env(adapter, skip_render_check=True, skip_close_check=True)  # info["step"] never repeats: no step check

    adapter.action_space.seed(0)
    actions = [adapter.action_space.sample() for _ in range(50)]

    def episode() -> tuple[list[Any], list[bool]]:
        adapter.reset(seed=1)
        steps = [adapter.step(action) for action in actions]
        return [(list(s[0]), s[1]) for s in steps], [s[2] for s in steps]

    first, terminated = episode()
    assert episode() == (first, terminated)  # same seed, same actions: same observations and rewards
    assert terminated == [False] * 49 + [True]  # ServingSim's default horizon ends the episode
    adapter.close()


@pytest.mark.parametrize(
    ("mode", "status", "reason"),
    [
        ("array", "ok", ""),
        ("scalars", "ok", ""),
        ("long", "failed", "the server observed 3 value(s); its observation_space declares 2"),
        ("nan", "failed", "observation does not fit its space: b = nan (not a finite number)"),
    ],
)
def test_numpy_values_are_numbers_and_a_bad_observation_fails_the_step(
    tmp_path: Path, mode: str, status: str, reason: str
) -> None:
    """Issue 30 item 2: numpy arrays and scalars were recorded as [null, null] or NaN with status ok, an
    np.float32 reward failed every step, a longer observation was cut silently."""
    server = f'env_class = "tests.gym.live_envs.NumpyEnv"\nenv_kwargs = {{ mode = "{mode}" }}\n'
    tests, scenario = write(tmp_path, 'agent = "random_search"\n', server)
    env = load_env(tests, scenario, output_dir=tmp_path / "out").env
    env.reset()
    observation, reward, _, info = env.step({"x": 2})
    env.close()
    assert (info["status"], info["reason"]) == (status, reason)
    with (env.record_dir / "trajectory.csv").open() as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["status"], row["reason"]) == (status, reason)
    if status == "ok":
        assert observation == [1.0, 2.0] and reward == 0.5
        assert json.loads(row["observation"]) == [1.0, 2.0] and float(row["reward"]) == 0.5
    else:
        assert reward == env.setup.penalty_reward
