"""``cloudai.gym``'s many-environment API: ``AsyncEnv`` + ``rollout`` (N environments at once under asyncio) and
``make_vec`` (Gymnasium's vector env over a test's sub-envs, each passing ``check_env``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cloudai.gym import AsyncEnv, load_env, make_vec, rollout

SCENARIO = 'name = "live"\n[[Tests]]\nid = "t"\ntest_name = "x"\n'


def write(tmp_path: Path, env: str = "RendezvousEnv", kwargs: str = "") -> tuple[Path, Path]:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "x.toml").write_text(
        'name = "x"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 6\n'
        'agent_metrics = ["t", "x"]\n[cmd_args]\nlive_rl_mode = true\n'
        f'env_class = "tests.gym.live_envs.{env}"\n{kwargs}x = [0, 1, 2]\ny = {{ low = 0.0, high = 1.0 }}\nz = 0\n'
    )
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    return tmp_path / "tests", tmp_path / "scenario.toml"


def test_rollout_steps_four_environments_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every step of RendezvousEnv waits for 4 instances: episodes collected one env at a time would break it."""
    tests, scenario = write(tmp_path, kwargs="env_kwargs = { parties = 4 }\n")
    loaded = load_env(tests, scenario, output_dir=tmp_path / "out")
    envs = [AsyncEnv(loaded.env), *(AsyncEnv(loaded.another(k)) for k in range(1, 4))]
    asked: list[int] = []

    async def policy(observation: list[float], index: int) -> dict[str, object]:
        asked.append(index)
        return {"x": index % 3, "y": 0.5}

    async def main() -> list:
        try:
            return await rollout(policy, envs, episodes=4)
        finally:
            await asyncio.gather(*(env.close() for env in envs))

    episodes = asyncio.run(main())
    assert len(episodes) == 4 and sorted(asked) == sorted([0, 1, 2, 3] * 3)
    said = capsys.readouterr().err  # where it recorded, once
    assert said.count("cloudai rollout:") == 1
    assert f"recording 4 environment(s) under {loaded.run_dir / 't'}: 0, 1, 2, 3" in said
    for episode in episodes:
        assert [t.terminated for t in episode] == [False, False, True]  # the env's done after 3 steps
        assert [t.next_observation[0] for t in episode] == [1.0, 2.0, 3.0]
        assert episode[1].observation == episode[0].next_observation
    for k in range(4):  # each environment recorded its own steps
        lines = (loaded.run_dir / "t" / str(k) / "episodes.jsonl").read_text().splitlines()
        assert [json.loads(line)["step_in_episode"] for line in lines] == [1, 2, 3]


def test_rollout_truncates_at_max_steps(tmp_path: Path) -> None:
    tests, scenario = write(tmp_path, env="EchoEnv", kwargs="env_kwargs = { every = 100 }\n")
    loaded = load_env(tests, scenario, output_dir=tmp_path / "out")
    env = AsyncEnv(loaded.env)
    episodes = asyncio.run(rollout(lambda obs, i: {"x": 1, "y": 0.1}, [env], episodes=2, max_steps=2))
    asyncio.run(env.close())
    assert [[(t.terminated, t.truncated) for t in e] for e in episodes] == [[(False, False), (False, True)]] * 2


def test_rollout_refuses_nothing_to_do() -> None:
    with pytest.raises(ValueError, match="at least one environment"):
        asyncio.run(rollout(lambda obs, i: {}, [], episodes=1))


def test_make_vec_is_a_gymnasium_vector_env_of_checked_sub_envs(tmp_path: Path) -> None:
    tests, scenario = write(tmp_path, env="EchoEnv")
    vec = make_vec(tests, scenario, num_envs=2, output_dir=tmp_path / "out", max_steps=4)
    try:
        assert isinstance(vec, gymnasium.vector.SyncVectorEnv) and vec.num_envs == 2
        observations, _ = vec.reset(seed=1)
        assert observations.shape == (2, 2)
        actions = {"x": np.array([2, 0]), "y": np.array([[0.5], [0.25]])}
        observations, rewards, terminated, truncated, _ = vec.step(actions)
        assert rewards.tolist() == [2.0, 0.0] and not terminated.any() and not truncated.any()
        for sub in vec.envs:
            check_env(sub.unwrapped, skip_render_check=True)
    finally:
        vec.close()
    # one results dir for the vector, a sub-dir each (check_env's spec.make() made a results dir of its own)
    recorded = [sorted(p.name for p in (run_dir / "t").iterdir()) for run_dir in (tmp_path / "out").iterdir()]
    assert ["0", "1"] in recorded
