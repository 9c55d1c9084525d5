"""env_params as context for Gymnasium trainers: the observation carries the next step's environment."""

from __future__ import annotations

import csv
from pathlib import Path

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from tests.gym_adapter.tomls import write_synthetic

from cloudai.gym.from_toml import make
from cloudai.gym.registration import ENV_ID, register_envs

LOADS = [0.0, 0.5]


def _with_env_params(root: Path) -> tuple[Path, Path]:
    tests, scenario = write_synthetic(root, steps=6)
    toml = tests / "synthetic.toml"
    seeded = 'agent = "random_search"\nagent_config = { seed = 3 }\n'
    text = toml.read_text().replace('agent = "random_search"\n', seeded)
    toml.write_text(
        text + f"background_load = {LOADS}\njitter = {{ low = 0.0, high = 0.3 }}\n"
        "[env_params.background_load]\n[env_params.jitter]\n"
    )
    return tests, scenario


def test_observation_holds_the_environment_the_next_step_runs_under(tmp_path: Path) -> None:
    tests, scenario = _with_env_params(tmp_path)
    adapter = make(tests, scenario, output_dir=tmp_path / "out")
    space = adapter.observation_space
    assert isinstance(space, spaces.Dict) and set(space.spaces) == {"observation", "env_params"}
    assert space["env_params"]["background_load"] == spaces.Discrete(len(LOADS))
    assert isinstance(space["env_params"]["jitter"], spaces.Box)
    assert "background_load" not in adapter.action_space.spaces  # the environment's, never the agent's

    observation, _ = adapter.reset(seed=0)
    announced = [observation["env_params"]]
    for _ in range(4):
        observation, _, _, _, _ = adapter.step(adapter.action_space.sample())
        announced.append(observation["env_params"])
    adapter.close()

    out_dir = Path(adapter.cloudai_env.setup.out_dir)  # type: ignore[attr-defined]
    with (out_dir / "env.csv").open() as handle:
        env_rows = list(csv.DictReader(handle))
    assert [row["step"] for row in env_rows] == ["1", "2", "3", "4"]
    for context, row in zip(announced, env_rows, strict=False):  # announced before step k, measured at step k
        assert LOADS[int(context["background_load"])] == float(row["background_load"])
        assert np.isclose(float(context["jitter"][0]), float(row["jitter"]))


def test_checker_passes_with_env_params(tmp_path: Path) -> None:
    """Registered as nondeterministic (a randomized environment, real jobs): the checker's other checks all run."""
    register_envs()
    tests, scenario = _with_env_params(tmp_path)
    env = gymnasium.make(ENV_ID, tests_dir=tests, scenario=scenario, output_dir=tmp_path / "out")
    assert env.spec is not None and env.spec.nondeterministic
    check_env(env.unwrapped, skip_render_check=True, skip_close_check=True)
    env.close()
