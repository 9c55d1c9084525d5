"""Issue 30 item 1: ``info["episode"]`` is Gymnasium's. Over every shipped example, Gymnasium's own
``RecordEpisodeStatistics`` and ``SyncVectorEnv`` run the adapter, and an SB3-shaped consumer reads the episode
statistics the way Stable-Baselines3 does (``len(ep_info)``, ``ep_info["r"]``); cloudai's fields are all under
``info["cloudai"]``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.wrappers import RecordEpisodeStatistics
from tests.conftest import CONF

import cloudai.gym  # noqa: F401  (registers cloudai/Test-v0)

TESTS = CONF / "common" / "test"
SCENARIOS = CONF / "common" / "test_scenario"
EXAMPLES = {  # the shipped agent-driven scenarios; fio's file made small (each trial writes it)
    "dse_synthetic": {},
    "dse_synthetic_grid": {},
    "dse_env_params": {},
    "dse_pareto": {},
    "dse_fio": {"args.size": "1m"},
    "live_serving_bandit": {},
    "live_serving_random": {},
}


def _make(name: str, out: Path, steps: int) -> gymnasium.Env[Any, Any]:
    kwargs = {"tests_dir": TESTS, "scenario": SCENARIOS / f"{name}.toml", "output_dir": out, **EXAMPLES[name]}
    return gymnasium.make("cloudai/Test-v0", max_steps=steps, **kwargs)


def sb3_episode_buffer(infos: list[dict[str, Any]]) -> list[dict[str, float]]:
    """What Stable-Baselines3's ``_update_info_buffer`` does with each step's info (it crashed on an int)."""
    buffer = []
    for info in infos:
        ep_info = info.get("episode")
        if ep_info is not None:
            assert len(ep_info) == 3  # {"r", "l", "t"}
            buffer.append({"r": float(ep_info["r"]), "l": float(ep_info["l"])})
    return buffer


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_record_episode_statistics_and_an_sb3_consumer(name: str, tmp_path: Path) -> None:
    if name == "dse_fio" and shutil.which("fio") is None:
        pytest.skip("needs fio (apt-get install fio)")
    env = RecordEpisodeStatistics(_make(name, tmp_path, steps=2))
    obs, info = env.reset(seed=0)
    assert set(info) == {"cloudai"} and env.observation_space.contains(obs)
    infos, rewards, done = [], [], False
    env.action_space.seed(0)
    while not done:
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        infos.append(info)
        rewards.append(reward)
        done = terminated or truncated
        assert info["cloudai"]["status"] in {"ok", "cached", "failed", "constraint", "infeasible", "timeout"}
        assert "knobs" in info["cloudai"] and "step" in info["cloudai"]
    (episode,) = sb3_episode_buffer(infos)
    assert episode["l"] == len(rewards) == 2 and episode["r"] == pytest.approx(sum(rewards), rel=1e-5)
    env.close()


@pytest.mark.parametrize("name", ["dse_synthetic", "dse_env_params", "live_serving_random"])
def test_sync_vector_env_runs_two_copies(name: str, tmp_path: Path) -> None:
    envs = gymnasium.vector.SyncVectorEnv(
        [lambda i=i: RecordEpisodeStatistics(_make(name, tmp_path / str(i), steps=2)) for i in range(2)]
    )
    envs.reset(seed=0)
    envs.action_space.seed(1)
    finished = 0
    for _ in range(2):
        _obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
        assert rewards.shape == (2,) and np.isfinite(rewards).all()
        assert set(infos["cloudai"]["status"]) <= {"ok", "cached", "failed", "constraint", "infeasible"}
        if "episode" in infos:  # the vector env's episode statistics, with their mask
            finished += int(infos["_episode"].sum())
            assert infos["episode"]["l"][infos["_episode"]].tolist() == [2] * int(infos["_episode"].sum())
    assert finished == 2 and (terminated | truncated).all()
    envs.close()
